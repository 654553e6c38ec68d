// The Status of a failed system call, from its errno.
// Thread-safety: a pure function.
#pragma once

#include <cerrno>
#include <cstring>
#include <string>

#include "common/status.h"

namespace engram {

// "<what>: <strerror>". Out of space (ENOSPC, EDQUOT) is kUnavailable: writers answer it with 503
// and try again once space is freed. Anything else is kInternal.
inline Status ErrnoStatus(const std::string& what, int err) {
  std::string message = what + ": " + std::strerror(err);
  if (err == ENOSPC || err == EDQUOT) return Status::Unavailable(std::move(message));
  return Status::Internal(std::move(message));
}

}  // namespace engram
