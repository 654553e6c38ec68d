// McpService: the MCP server built into `engram serve`, assembled from its parts: the tools over
// the memory, knowledge-base and skill services, the protocol engine and the Streamable HTTP
// endpoint (docs/mcp.md).
//
// Thread-safety: after construction and RegisterRoutes, everything it hands out is safe to use
// concurrently. Ownership: does not own the services, which must outlive it; it must outlive the
// router it registers routes in (the HTTP server stops before it is destroyed).
#pragma once

#include <string>

#include "api/router.h"
#include "mcp/http_endpoint.h"
#include "mcp/protocol.h"
#include "mcp/service_tools.h"
#include "mcp/tool_registry.h"

namespace engram::mcp {

struct McpServiceOptions {
  std::string version = "0.0.0";  // serverInfo.version
  MemoryToolOptions memory;
  KbApiLimits knowledge;
  SkillToolOptions skills;
  HttpEndpointOptions http;
};

class McpService {
 public:
  McpService(MemoryService* memories, KbService* knowledge, SkillService* skills,
             McpServiceOptions options);
  McpService(const McpService&) = delete;
  McpService& operator=(const McpService&) = delete;

  void RegisterRoutes(Router& router);
  const ToolRegistry& tools() const { return tools_; }
  HttpEndpoint& endpoint() { return endpoint_; }

 private:
  ToolRegistry tools_;
  Protocol protocol_;
  HttpEndpoint endpoint_;
};

// What initialize tells the model the server is for.
extern const char* const kServerInstructions;

}  // namespace engram::mcp
