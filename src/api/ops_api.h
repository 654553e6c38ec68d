// Operator endpoints: /healthz, P3/health, /metrics, /openapi.json.
// Thread-safety: handlers are safe to run concurrently.
#pragma once

#include "api/metrics.h"
#include "api/router.h"
#include "store/store.h"

namespace engram {

// The OpenAPI 3.1 document served at /openapi.json (compiled in from api/openapi.json).
const char* OpenApiDocument();

void RegisterOpsRoutes(Router& router, Store* store, Metrics* metrics);

}  // namespace engram
