#include "mcp/mcp_service.h"

#include "mcp/http_routes.h"

namespace engram::mcp {

const char* const kServerInstructions =
    "Engram keeps long-term memory for this agent. Before answering anything that may depend on "
    "what is known about the user or earlier work, call memory_recall with the user's user_id. "
    "When the user states a lasting fact, preference, plan or decision, call memory_store. "
    "knowledge_search reads knowledge-base documents; skill_search and skill_get find reusable "
    "procedures.";

namespace {

ToolRegistry BuildTools(MemoryService* memories, KbService* knowledge, SkillService* skills,
                        const McpServiceOptions& options) {
  ToolRegistry tools;
  AddMemoryTools(tools, memories, options.memory);
  AddKnowledgeTools(tools, knowledge, options.knowledge);
  AddSkillTools(tools, skills, options.skills);
  return tools;
}

}  // namespace

McpService::McpService(MemoryService* memories, KbService* knowledge, SkillService* skills,
                       McpServiceOptions options)
    : tools_(BuildTools(memories, knowledge, skills, options)),
      protocol_(&tools_,
                ServerInfo{.version = options.version, .instructions = kServerInstructions}),
      endpoint_(&protocol_, options.http) {}

void McpService::RegisterRoutes(Router& router) { RegisterMcpRoutes(router, &endpoint_); }

}  // namespace engram::mcp
