// `engram serve`: composes the feature modules (src/modules/) over the store, starts the HTTP
// server, runs until SIGTERM or SIGINT, then shuts down gracefully (in-flight requests finish,
// background work stops, the store is flushed and closed).
#pragma once

#include "config/serve_options.h"

namespace engram {

// Returns the process exit code: 2 for a configuration the server cannot use, 1 when something
// it needs failed at start.
int RunServe(ServeOptions options);

}  // namespace engram
