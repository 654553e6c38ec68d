// The small POSIX file helpers the stores, the index and the command line share: a descriptor
// closed on every path out, and an fsync by path (a file, or a directory after a rename in it).
// Thread-safety: UniqueFd is a value owned by one thread at a time; SyncPath is a pure function.
#pragma once

#include <string>

#include "common/status.h"

namespace engram {

// Owns a descriptor (negative: none) and closes it when it goes.
class UniqueFd {
 public:
  UniqueFd() = default;
  explicit UniqueFd(int fd) : fd_(fd) {}
  ~UniqueFd();
  UniqueFd(UniqueFd&& other) noexcept;
  UniqueFd& operator=(UniqueFd&& other) noexcept;
  UniqueFd(const UniqueFd&) = delete;
  UniqueFd& operator=(const UniqueFd&) = delete;

  int get() const { return fd_; }
  bool valid() const { return fd_ >= 0; }
  // Closes now and returns what close() said (a deferred write error shows here); 0 when none.
  int Close();

 private:
  int fd_ = -1;
};

// fsync of the file or directory at `path` (open read-only). Errors name the path: "cannot open
// <path>: ..." or "cannot sync <path>: ...", as ErrnoStatus (out of space is kUnavailable); a path
// that does not exist is kNotFound.
Status SyncPath(const std::string& path);

}  // namespace engram
