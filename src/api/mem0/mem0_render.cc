#include "api/mem0/mem0_render.h"

#include <fmt/format.h>

#include "api/envelope.h"
#include "api/memory_fields.h"
#include "common/job_status.h"
#include "common/json_reader.h"
#include "common/time_util.h"

namespace engram {

namespace {

using json = nlohmann::json;

json IdOrNull(const std::string& v) { return v.empty() ? json(nullptr) : json(v); }

json MetadataOf(const std::optional<std::string>& metadata_json) {
  if (!metadata_json) return json(nullptr);
  json j = ReadJsonOrDiscarded(*metadata_json, kStoredJsonLimits);
  return j.is_object() ? j : json::object();
}

json CategoriesOf(const std::vector<std::string>& categories) {
  return categories.empty() ? json(nullptr) : json(categories);
}

}  // namespace

json RenderMem0Memory(const AgentMemory& m) {
  return {{"id", m.id},
          {"memory", m.text},
          {"user_id", IdOrNull(m.user_id)},
          {"agent_id", IdOrNull(m.agent_id)},
          {"app_id", IdOrNull(m.app_id)},
          {"run_id", IdOrNull(m.run_id)},
          {"metadata", MetadataOf(m.metadata_json)},
          {"categories", CategoriesOf(m.categories)},
          {"created_at", FormatIsoMicros(m.created_at_us)},
          {"updated_at", FormatIsoMicros(m.updated_at_us)},
          {"expiration_date",
           m.expires_at_us ? json(FormatExpirationDate(*m.expires_at_us)) : json(nullptr)},
          {"immutable", false}};
}

json ProjectMem0Fields(json memory, const std::vector<std::string>& fields) {
  if (fields.empty()) return memory;
  json out = {{"id", memory["id"]}};
  for (const auto& f : fields) {
    if (auto it = memory.find(f); it != memory.end()) out[f] = *it;
  }
  return out;
}

json RenderMem0History(const HistoryRecord& row, const AgentMemory* current) {
  const std::string at = FormatIsoMicros(row.at_us);
  return {{"id", fmt::format("{}-{}", row.memory_id, row.seq)},
          {"memory_id", row.memory_id},
          {"event", row.event},
          {"old_memory", row.old_text ? json(*row.old_text) : json(nullptr)},
          {"new_memory", row.new_text ? json(*row.new_text) : json(nullptr)},
          {"input", json::array()},
          {"metadata",
           MetadataOf(row.new_metadata_json ? row.new_metadata_json : row.old_metadata_json)},
          {"categories", current ? CategoriesOf(current->categories) : json(nullptr)},
          {"user_id", current ? IdOrNull(current->user_id) : json(nullptr)},
          {"event_id", IdOrNull(row.event_id)},
          {"created_at", at},
          {"updated_at", at}};
}

json Mem0EventResults(const MemoryEventRecord& event) {
  json out = json::array();
  // The scope every memory of the event belongs to: the add's ids.
  json scope = {
      {"user_id", nullptr}, {"agent_id", nullptr}, {"app_id", nullptr}, {"run_id", nullptr}};
  if (auto request = DecodeAddRequest(event.workspace, event.request_json); request.ok()) {
    scope = {{"user_id", IdOrNull(request->user_id)},
             {"agent_id", IdOrNull(request->agent_id)},
             {"app_id", IdOrNull(request->app_id)},
             {"run_id", IdOrNull(request->run_id)}};
  }
  const json result = ReadJsonOrDiscarded(event.result_json, kStoredJsonLimits);
  if (!result.is_object()) return out;
  auto events = result.find("events");
  if (events == result.end() || !events->is_array()) return out;
  for (const json& e : *events) {
    if (!e.is_object()) continue;
    const json text = e.value("memory", json(nullptr));
    json item = {{"id", e.value("memory_id", json(nullptr))},
                 {"event", e.value("event", json(nullptr))},
                 {"memory", text},
                 {"data", {{"memory", text}}}};
    item.update(scope);
    if (auto prev = e.find("previous_memory"); prev != e.end() && !prev->is_null()) {
      item["previous_memory"] = *prev;
    }
    out.push_back(std::move(item));
  }
  return out;
}

json RenderMem0Event(const MemoryEventRecord& e) {
  return {{"id", e.id},
          {"event_type", "ADD"},
          {"status", JobStatusName(e.status, JobVocabulary::kMemoryEvent)},
          {"results", Mem0EventResults(e)},
          {"error_message", e.error_message.empty() ? json(nullptr) : json(e.error_message)},
          {"created_at", FormatIsoMicros(e.created_at_us)},
          {"updated_at", FormatIsoMicros(e.updated_at_us)}};
}

json RenderMem0Entity(const MemoryEntity& e) {
  return {{"id", fmt::format("{}:{}", e.type, e.name)},
          {"name", e.name},
          {"type", e.type},
          {"total_memories", e.total_memories},
          {"created_at", FormatIsoMicros(e.created_at_us)},
          {"updated_at", FormatIsoMicros(e.updated_at_us)},
          {"metadata", json::object()}};
}

json Mem0Page(json results, size_t total, size_t page, size_t page_size,
              const std::string& url_base) {
  auto link = [&](size_t p) {
    return json(fmt::format("{}?page={}&page_size={}", url_base, p, page_size));
  };
  const bool has_next = page * page_size < total;
  return {{"count", total},
          {"next", has_next ? link(page + 1) : json(nullptr)},
          {"previous", page > 1 ? link(page - 1) : json(nullptr)},
          {"results", std::move(results)}};
}

std::string Mem0RequestUrl(const HttpRequest& request) {
  std::string scheme = "http";
  if (const std::string* proto = request.Header("x-forwarded-proto")) {
    if (*proto == "https") scheme = "https";
  }
  const std::string* host = request.Header("host");
  // A Host header is a client's word: only plain host[:port] characters go into the links.
  std::string safe;
  if (host != nullptr && host->size() <= 255) {
    for (char c : *host) {
      const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                      c == '.' || c == '-' || c == ':' || c == '[' || c == ']';
      if (!ok) {
        safe.clear();
        break;
      }
      safe.push_back(c);
    }
  }
  if (safe.empty()) safe = "localhost";
  std::string path = request.path;
  if (path.empty() || path.back() != '/') path.push_back('/');
  return fmt::format("{}://{}{}", scheme, safe, path);
}

HttpResponse Mem0ErrorResponse(const Status& status, const std::string& request_id, double) {
  return JsonResponse(HttpStatusOf(status.code()), json{{"detail", status.message()},
                                                        {"code", ApiCodeOf(status.code())},
                                                        {"request_id", request_id}});
}

}  // namespace engram
