// GET /workspaces: the workspaces a key may see, each with what it holds (memories and their
// users, events, skills, tasks, knowledge bases and documents, Leaderboard users and messages).
// A key limited to some workspaces sees exactly those (an empty one with zero counts); a key for
// every workspace sees each one that holds data. Operator family: plain JSON, the common error
// body. Thread-safety: the registered handler is safe to run concurrently. Ownership: `census` and
// `auth` must outlive the router.
#pragma once

#include <nlohmann/json.hpp>

#include "api/auth.h"
#include "api/router.h"
#include "store/workspace_census.h"

namespace engram {

// One workspace as the endpoint renders it.
nlohmann::json RenderWorkspaceCounts(const WorkspaceCounts& counts);

void RegisterWorkspaceRoutes(Router& router, WorkspaceCensus* census, const ApiKeyAuth* auth);

}  // namespace engram
