// Response rendering of the mem0-compatible REST API: mem0's snake_case shapes for memories,
// history rows, events, entities and pages, and its error body.
// Thread-safety: pure functions.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "common/status.h"
#include "core/memory_service.h"
#include "server/http_types.h"

namespace engram {

// {id, memory, user_id, agent_id, app_id, run_id, metadata, categories, created_at, updated_at,
//  expiration_date, immutable}; unset ids and dates are null, as mem0 sends them.
nlohmann::json RenderMem0Memory(const AgentMemory& memory);

// `memory` keeping only `fields` (and id); all of it when `fields` is empty.
nlohmann::json ProjectMem0Fields(nlohmann::json memory, const std::vector<std::string>& fields);

// A history row: {id, memory_id, event, old_memory, new_memory, input, metadata, categories,
// user_id, event_id, created_at, updated_at}. `current` (may be null) supplies the memory's scope.
nlohmann::json RenderMem0History(const HistoryRecord& row, const AgentMemory* current);

// An add event: {id, event_type: "ADD", status, results: Mem0EventResults,
// error_message, created_at, updated_at}.
nlohmann::json RenderMem0Event(const MemoryEventRecord& event);

// What an add's event changed, as mem0's synchronous add answers: [{id, event, memory, data,
// user_id, agent_id, app_id, run_id}].
nlohmann::json Mem0EventResults(const MemoryEventRecord& event);

// {id, name, type, total_memories, created_at, updated_at, metadata}.
nlohmann::json RenderMem0Entity(const MemoryEntity& entity);

// {count, next, previous, results}: next / previous are this URL (`url_base`, path without query,
// e.g. "http://host:8080/v3/memories/") with the neighbouring page, or null.
nlohmann::json Mem0Page(nlohmann::json results, size_t total, size_t page, size_t page_size,
                        const std::string& url_base);

// The absolute URL of the request's path (scheme from X-Forwarded-Proto, else http).
std::string Mem0RequestUrl(const HttpRequest& request);

// {"detail": message, "code": Engram's code, "request_id"} with the status's HTTP code.
HttpResponse Mem0ErrorResponse(const Status& status, const std::string& request_id,
                               double latency_ms);

}  // namespace engram
