// The MCP endpoint's routes in the server's route table.
//
//   /mcp                          workspace "default", or the one header X-Engram-Workspace names
//   /v1/agentic-memory/mcp        the same endpoint at the path of the Alibaba Agentic Memory
//                                 plugin (<endpoint>/v1/agentic-memory/mcp)
//   /mcp/workspaces/{workspace}   the workspace in the path (a header naming another is a 400)
//
// each with POST (messages), DELETE (end a session) and GET (405: no server-initiated stream).
// The routes take API keys like every other route (AuthMode::kApiKey) and name their workspace
// before the body is read, so a missing or wrong key is a 401 and a key limited to other
// workspaces a 403 without the server reading or parsing anything of the message.
//
// Thread-safety: registration is single-threaded; the handlers are safe to run concurrently.
// Ownership: the endpoint is not owned and must outlive the router.
#pragma once

#include "api/router.h"
#include "mcp/http_endpoint.h"

namespace engram::mcp {

inline constexpr const char* kWorkspaceHeader = "x-engram-workspace";

void RegisterMcpRoutes(Router& router, HttpEndpoint* endpoint);

}  // namespace engram::mcp
