// `engram serve`: wires store, index, services, API and transport together, runs until SIGTERM or
// SIGINT, then shuts down gracefully (in-flight requests finish, the store is flushed and closed).
#pragma once

#include <string>

#include "config/serve_options.h"

namespace engram {

// The model fetched by scripts/setup.sh, found relative to the binary (build/engram).
std::string DefaultModelDir();

// Returns the process exit code.
int RunServe(ServeOptions options);

}  // namespace engram
