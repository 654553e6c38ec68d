// The MCP tools over Engram's services: memories (V4), knowledge bases and skills (V3).
//
// Tools are thin: arguments are checked against the tool's schema by the registry, then turned
// into the REST API's request body and read by the REST API's own parser (ParseMemoryAdd,
// ParseMemorySearch, ParseSkillSearch, ...), so both doors accept exactly the same input with the
// same limits and messages; the service call and the rendering follow. Every call runs in the
// workspace of its session (ToolContext::workspace).
//
//   memory_store    add a conversation or a text (infer: extract facts, or store verbatim); by
//                   default waits (bounded) for the add's event, so a recall right after it
//                   finds what was stored
//   memory_recall   hybrid search with the V4 filter grammar, top_k, threshold
//   memory_get / memory_update / memory_forget / memory_history   one memory by id
//   memory_list     a scope's memories, newest first, paged
//   memory_entities   who and what a scope's memories mention (names, code identifiers), paged
//   knowledge_search   chunks of a knowledge base
//   skill_search / skill_get   an owner's skills
//
// Thread-safety: the handlers are safe to run concurrently. Ownership: the services are not
// owned and must outlive the registry.
#pragma once

#include <chrono>

#include "api/kb_api.h"
#include "api/memory_api.h"
#include "api/skills_api.h"
#include "mcp/tool_registry.h"

namespace engram::mcp {

struct MemoryToolOptions {
  MemoryApiLimits limits;
  // memory_store waits at most this long for its event before answering PENDING with the id.
  std::chrono::milliseconds max_store_wait{15000};
};

void AddMemoryTools(ToolRegistry& registry, MemoryService* service, MemoryToolOptions options);
void AddKnowledgeTools(ToolRegistry& registry, KbService* service, KbApiLimits limits);

struct SkillToolOptions {
  SkillApiLimits limits;
  // skill_get returns file contents up to this many bytes in all (SKILL.md first); the paths
  // of the rest are listed.
  size_t max_file_bytes = 256 << 10;
};
void AddSkillTools(ToolRegistry& registry, SkillService* service, SkillToolOptions options);

}  // namespace engram::mcp
