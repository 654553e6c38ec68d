// Request parsing of the mem0-compatible REST API (docs/mem0.md): mem0's bodies and query strings
// turned into the memory service's requests. Both client generations are read: 3.x sends entity
// ids inside `filters`, 2.x also top-level or as query parameters. Fields Engram cannot honour
// are refused naming the feature (kNotImplemented), never ignored into a silent success; fields
// that only tune mem0's hosted service (output_format, version, org / project names) are
// accepted and have no effect.
// Thread-safety: pure functions.
#pragma once

#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "api/memory_api.h"
#include "core/memory_service.h"

namespace engram {

struct Mem0Add {
  MemoryAddRequest request;
  bool async_mode = true;  // 2.x: false waits for the extraction and answers its results
};

// POST /v3/memories/add/ and POST /v1/memories/ bodies. `follows_instructions`: whether the
// extractor can follow custom_instructions (an LLM one).
Result<Mem0Add> ParseMem0Add(const nlohmann::json& body, const std::string& workspace,
                             const MemoryApiLimits& limits, bool follows_instructions);

struct Mem0Search {
  MemorySearchRequest request;
  std::vector<std::string> fields;  // keys to return besides id; empty = all
  bool results_object = false;      // answer {"results": [...]} rather than a bare array
};

// The search bodies. `v3`: POST /v3/memories/search/ (entity ids only inside filters, answers
// {"results": ...}); otherwise the 2.x paths, which also take top-level entity ids.
Result<Mem0Search> ParseMem0Search(const nlohmann::json& body, const std::string& workspace,
                                   const MemoryApiLimits& limits, bool v3);

// The filter of a list (getAll) body: `filters`, top-level entity ids (2.x), start_date /
// end_date (created_at bounds) and categories (any of). Must name an entity.
Result<MemoryFilter> ParseMem0ListBody(const nlohmann::json& body, const MemoryApiLimits& limits);

// The filter named by query parameters user_id / agent_id / app_id / run_id (GET and DELETE
// /v1/memories/); kInvalidParameter when none is given.
Result<MemoryFilter> Mem0EntityFilterFromQuery(const std::map<std::string, std::string>& params,
                                               const MemoryApiLimits& limits);

// PUT /v1/memories/{id}/: text, metadata, timestamp, expiration_date (at least one).
Result<MemoryUpdateRequest> ParseMem0Update(const nlohmann::json& body,
                                            const std::string& workspace, const std::string& id,
                                            const MemoryApiLimits& limits);

struct Mem0BatchItem {
  std::string memory_id;
  std::optional<std::string> text;  // batch update: the new text
};

// PUT / DELETE /v1/batch/ bodies: {"memories": [{"memory_id", "text"?}, ...]}, 1..max_items,
// ids unique; `with_text` requires a text per item.
Result<std::vector<Mem0BatchItem>> ParseMem0Batch(const nlohmann::json& body, bool with_text,
                                                  size_t max_items, const MemoryApiLimits& limits);

struct Mem0Feedback {
  std::string memory_id;
  std::string feedback;  // POSITIVE | NEGATIVE | VERY_NEGATIVE | "" (withdrawn)
  std::string reason;
};

// POST /v1/feedback/.
Result<Mem0Feedback> ParseMem0Feedback(const nlohmann::json& body, const MemoryApiLimits& limits);

// The entity type of a path ("user", "agent", "app", "run"; plural forms too) as a memory
// field name ("user_id", ...); kInvalidParameter naming the allowed types otherwise.
Result<std::string> Mem0EntityField(std::string_view type);

}  // namespace engram
