// Which workspace a mem0-compatible request works on (docs/mem0.md, "Projects and keys"): mem0's
// project is an Engram workspace. The request's project_id (query parameter, else body field)
// names it; without one, the key's only workspace when the key is limited to exactly one; else
// the configured default. The key must be valid for the workspace chosen.
// Thread-safety: pure function over its arguments.
#pragma once

#include <map>
#include <nlohmann/json.hpp>
#include <string>

#include "api/auth.h"
#include "common/status.h"
#include "server/http_types.h"

namespace engram {

// `body` may be null (requests without one). kInvalidParameter for a malformed project_id,
// kUnauthenticated / kForbidden as ApiKeyAuth::Check.
Result<std::string> ResolveMem0Workspace(const HttpRequest& request,
                                         const std::map<std::string, std::string>& query,
                                         const nlohmann::json* body, const ApiKeyAuth& auth,
                                         const std::string& default_workspace);

}  // namespace engram
