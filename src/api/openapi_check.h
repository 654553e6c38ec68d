// CompareRoutesWithOpenApi: keeps /openapi.json honest. The document is written by hand
// (src/api/openapi.json, compiled in); the route table is built in code. A test builds the
// server's whole route table and compares the two (modules_test), so the build catches a route
// added without its documentation, or documentation of a route that is gone.
//
// Paths are compared with parameter names ignored ("{workspace}" and "{workspace_name}" are the
// same segment); methods case-insensitively.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "api/router.h"

namespace engram {

// One line per disagreement ("GET /x: routed but not in openapi.json", "... documented but not
// routed", or the document's parse error); empty when they agree.
std::vector<std::string> CompareRoutesWithOpenApi(const Router& router,
                                                  std::string_view openapi_json);

}  // namespace engram
