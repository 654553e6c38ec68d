#include "common/posix_file.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <utility>

#include "common/errno_status.h"

namespace engram {

UniqueFd::~UniqueFd() { (void)Close(); }

UniqueFd::UniqueFd(UniqueFd&& other) noexcept : fd_(std::exchange(other.fd_, -1)) {}

UniqueFd& UniqueFd::operator=(UniqueFd&& other) noexcept {
  if (this != &other) {
    (void)Close();
    fd_ = std::exchange(other.fd_, -1);
  }
  return *this;
}

int UniqueFd::Close() {
  if (fd_ < 0) return 0;
  // Linux releases the descriptor even when close() fails, EINTR included: never retry.
  return ::close(std::exchange(fd_, -1));
}

Status SyncPath(const std::string& path) {
  UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (!fd.valid()) {
    const int err = errno;
    if (err == ENOENT) return Status::NotFound("cannot open " + path + ": " + std::strerror(err));
    return ErrnoStatus("cannot open " + path, err);
  }
  if (::fsync(fd.get()) != 0) return ErrnoStatus("cannot sync " + path, errno);
  return Status::Ok();
}

}  // namespace engram
