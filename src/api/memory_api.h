// The Agentic Memory V4 memory endpoints (docs/api/README.md section 1, "Memories (V4)"):
// JSON <-> MemoryService. Responses are bare objects, as the reference API sends them.
// Thread-safety: stateless functions; the registered handlers are safe to run concurrently.
#pragma once

#include <nlohmann/json.hpp>
#include <string_view>

#include "api/router.h"
#include "core/memory_filter.h"
#include "core/memory_service.h"

namespace engram {

struct MemoryApiLimits {
  size_t max_id_bytes = 256;  // user_id, agent_id, run_id, memory ids
  size_t max_messages = 1000;
  size_t max_message_bytes = 64 << 10;
  size_t max_query_bytes = 16 << 10;
  size_t max_metadata_bytes = 64 << 10;
  size_t max_memory_bytes = 64 << 10;  // text of PUT
  int max_top_k = 1000;
  int max_page_size = 1000;
  FilterLimits filter;
};

// Parsing, exposed for tests and fuzzing. `workspace` is the path's workspace.
Result<MemoryAddRequest> ParseMemoryAdd(std::string_view body, const std::string& workspace,
                                        const MemoryApiLimits& limits);
Result<MemorySearchRequest> ParseMemorySearch(std::string_view body, const std::string& workspace,
                                              const MemoryApiLimits& limits);
Result<MemoryUpdateRequest> ParseMemoryUpdate(std::string_view body, const std::string& workspace,
                                              const std::string& id, const MemoryApiLimits& limits);

// An entity of GET …/entities as the API and the MCP tool render it: {name, kind, aliases,
// memory_count, first_seen, last_seen}.
nlohmann::json RenderNamedEntity(const CatalogEntity& entity);

void RegisterMemoryRoutes(Router& router, MemoryService* service, MemoryApiLimits limits);

}  // namespace engram
