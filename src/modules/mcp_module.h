// The MCP module: the Model Context Protocol front door at /mcp (Streamable HTTP), whose tools
// call the memory, knowledge-base and skill services with those APIs' limits (docs/mcp.md).
// Ownership: the caller owns the service; the three modules must outlive it.
#pragma once

#include <memory>

#include "config/serve_options.h"
#include "mcp/mcp_service.h"

namespace engram {

class KnowledgeModule;
class MemoryModule;
class SkillsModule;

struct McpModuleDeps {
  MemoryModule* memories = nullptr;
  KnowledgeModule* knowledge = nullptr;
  SkillsModule* skills = nullptr;
};

std::unique_ptr<mcp::McpService> BuildMcpService(const ServeOptions& options, McpModuleDeps deps);

}  // namespace engram
