// How a feature module reports that it cannot start: Build functions answer kInvalidParameter when
// the configuration cannot work (the process exits 2, as for a bad flag) and any other error when
// something the module needs failed at start (a file, the store, an endpoint: exit 1). The message
// is logged as it is, so it names the flag or the resource.
#pragma once

#include <string>

#include "common/status.h"

namespace engram {

inline Status ConfigurationError(std::string message) {
  return Status::InvalidParameter(std::move(message));
}
inline Status StartFailure(std::string message) { return Status::Internal(std::move(message)); }

// The process exit code of a module that could not start.
inline int StartExitCode(const Status& status) {
  return status.code() == StatusCode::kInvalidParameter ? 2 : 1;
}

}  // namespace engram
