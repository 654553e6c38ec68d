#include "api/memory_api.h"

#include <fmt/format.h>

#include <cmath>
#include <memory>
#include <nlohmann/json.hpp>

#include "api/conversation_input.h"
#include "api/envelope.h"
#include "api/json_input.h"
#include "api/memory_fields.h"
#include "api/query_params.h"
#include "api/search_explanation_json.h"
#include "common/job_status.h"
#include "common/json_reader.h"
#include "common/time_util.h"
#include "core/memory_provenance.h"

namespace engram {

namespace {

using json = nlohmann::json;

constexpr const char* kPrefix = "/v4/openapi/workspaces/{workspace_name}/memory/{service_id}";

Status CheckId(const std::string& value, std::string_view name, const MemoryApiLimits& limits) {
  return CheckIdValue(value, name, limits.max_id_bytes);
}

// Reads the optional scope ids user_id / agent_id / run_id of a body.
Status ReadScopeIds(const json& j, const MemoryApiLimits& limits, std::string* user_id,
                    std::string* agent_id, std::string* run_id) {
  return ReadIdFields(j, {"user_id", "agent_id", "run_id"}, limits.max_id_bytes,
                      {user_id, agent_id, run_id});
}

// Unset ids are "" (the reference shows them as strings), never null.
json IdString(const std::string& v) { return json(v); }

json MetadataOf(const std::string& metadata_json) {
  json j = ReadJsonOrDiscarded(metadata_json, kStoredJsonLimits);
  return j.is_object() ? j : json::object();
}

json RenderMemory(const AgentMemory& m, const char* text_key = "memory") {
  json provenance = ProvenanceToJson(m.provenance_json);
  const int64_t valid_from = ValidFromUs(m, provenance);
  return {{"id", m.id},
          {text_key, m.text},
          {"user_id", IdString(m.user_id)},
          {"agent_id", IdString(m.agent_id)},
          {"run_id", IdString(m.run_id)},
          {"metadata", MetadataOf(m.metadata_json)},
          {"created_at", FormatIsoMicros(m.created_at_us)},
          {"updated_at", FormatIsoMicros(m.updated_at_us)},
          // Beyond the reference (docs/memory-api.md): when this version held, null valid_to for
          // the current one; where the memory came from, null when unknown.
          {"valid_from", FormatIsoMicros(valid_from)},
          {"valid_to", IsoOrNull(m.valid_to_us)},
          {"provenance", std::move(provenance)}};
}

json RenderEvent(const MemoryEventRecord& e) {
  json out = {{"id", e.id},
              {"status", JobStatusName(e.status, JobVocabulary::kMemoryEvent)},
              {"results", json::array()},
              {"events", json::array()},
              {"error_message", e.error_message},
              {"created_at", FormatIsoMicros(e.created_at_us)},
              {"updated_at", FormatIsoMicros(e.updated_at_us)}};
  json result = ReadJsonOrDiscarded(e.result_json, kStoredJsonLimits);
  if (result.is_object()) {
    if (result.contains("results")) out["results"] = result["results"];
    if (result.contains("events")) out["events"] = result["events"];
  }
  return out;
}

json TextOrNull(const std::optional<std::string>& v) { return v ? json(*v) : json(nullptr); }

json MetadataOrNull(const std::optional<std::string>& v) {
  return v ? MetadataOf(*v) : json(nullptr);
}

// user_id / agent_id / run_id query parameters as a filter; kInvalidParameter if none is given.
Result<MemoryFilter> ScopeFromQuery(const std::map<std::string, std::string>& params,
                                    const MemoryApiLimits& limits) {
  MemoryFilter filter;
  bool any = false;
  for (const char* name : {"user_id", "agent_id", "run_id"}) {
    auto it = params.find(name);
    if (it == params.end() || it->second.empty()) continue;
    ENGRAM_RETURN_IF_ERROR(CheckId(it->second, name, limits));
    filter.AndEquals(name, it->second);
    any = true;
  }
  if (!any) {
    return Status::InvalidParameter("at least one of user_id, agent_id, run_id is required");
  }
  return filter;
}

}  // namespace

Result<MemoryAddRequest> ParseMemoryAdd(std::string_view body, const std::string& workspace,
                                        const MemoryApiLimits& limits) {
  auto parsed = ParseJsonObject(body);
  if (!parsed.ok()) return parsed.status();
  const json& j = *parsed;
  MemoryAddRequest req;
  req.workspace = workspace;
  auto messages = ParseConversation(j, {limits.max_messages, limits.max_message_bytes});
  if (!messages.ok()) return messages.status();
  req.messages = std::move(*messages);
  ENGRAM_RETURN_IF_ERROR(ReadScopeIds(j, limits, &req.user_id, &req.agent_id, &req.run_id));
  if (req.user_id.empty() && req.agent_id.empty() && req.run_id.empty()) {
    return Status::InvalidParameter("at least one of user_id, agent_id, run_id is required");
  }
  auto metadata = ReadMetadataField(j, limits.max_metadata_bytes);
  if (!metadata.ok()) return metadata.status();
  req.metadata_json = std::move(*metadata);
  auto infer = GetBool(j, "infer");
  if (!infer.ok()) return infer.status();
  req.infer = infer->value_or(true);
  auto ts = ReadTimestampField(j);
  if (!ts.ok()) return ts.status();
  req.timestamp_us = *ts;
  auto expires = ReadExpirationField(j);
  if (!expires.ok()) return expires.status();
  req.expires_at_us = *expires;
  return req;
}

Result<MemorySearchRequest> ParseMemorySearch(std::string_view body, const std::string& workspace,
                                              const MemoryApiLimits& limits) {
  auto parsed = ParseJsonObject(body);
  if (!parsed.ok()) return parsed.status();
  const json& j = *parsed;
  MemorySearchRequest req;
  req.workspace = workspace;
  auto query = GetString(j, "query", "query", {.max_bytes = limits.max_query_bytes});
  if (!query.ok()) return query.status();
  if (!IsValidUtf8(**query)) return Status::InvalidParameter("query must be valid UTF-8");
  req.query = **query;
  if (auto f = j.find("filters"); f != j.end() && !f->is_null()) {
    auto filter = MemoryFilter::Parse(*f, "filters", limits.filter);
    if (!filter.ok()) return filter.status();
    req.filter = std::move(*filter);
  }
  std::string ids[3];
  ENGRAM_RETURN_IF_ERROR(ReadScopeIds(j, limits, &ids[0], &ids[1], &ids[2]));
  const char* names[3] = {"user_id", "agent_id", "run_id"};
  for (int i = 0; i < 3; ++i) {
    if (!ids[i].empty()) req.filter.AndEquals(names[i], ids[i]);
  }
  if (!req.filter.ScopeKeys()) {
    return Status::InvalidParameter(
        "at least one of user_id, agent_id, run_id must constrain the search (top-level or in "
        "filters)");
  }
  auto top_k = GetInt(j, "top_k", "top_k", 1, limits.max_top_k, false);
  if (!top_k.ok()) return top_k.status();
  if (*top_k) req.top_k = static_cast<size_t>(**top_k);
  auto threshold = ReadThresholdField(j);
  if (!threshold.ok()) return threshold.status();
  if (*threshold) req.threshold = **threshold;
  auto explain = GetBool(j, "explain");
  if (!explain.ok()) return explain.status();
  req.explain = explain->value_or(false);
  auto reference = GetTime(j, "reference_date");
  if (!reference.ok()) return reference.status();
  req.reference_us = *reference;
  req.show_replaced = true;  // RenderMemory shows valid_to
  return req;
}

Result<MemoryUpdateRequest> ParseMemoryUpdate(std::string_view body, const std::string& workspace,
                                              const std::string& id,
                                              const MemoryApiLimits& limits) {
  auto parsed = ParseJsonObject(body);
  if (!parsed.ok()) return parsed.status();
  const json& j = *parsed;
  MemoryUpdateRequest req;
  req.workspace = workspace;
  req.id = id;
  auto text =
      GetString(j, "text", "text", {.required = false, .max_bytes = limits.max_memory_bytes});
  if (!text.ok()) return text.status();
  if (*text && !IsValidUtf8(**text)) return Status::InvalidParameter("text must be valid UTF-8");
  req.text = *text;
  if (j.contains("metadata") && !j["metadata"].is_null()) {
    auto metadata = ReadMetadataField(j, limits.max_metadata_bytes);
    if (!metadata.ok()) return metadata.status();
    req.metadata_patch_json = std::move(*metadata);
  }
  if (!req.text && !req.metadata_patch_json) {
    return Status::InvalidParameter("at least one of text, metadata is required");
  }
  return req;
}

namespace {

// The V4 memory handlers, one per route, over the service and the request limits they share.
class MemoryHandlers {
 public:
  MemoryHandlers(MemoryService* service, MemoryApiLimits limits)
      : service_(service), limits_(std::move(limits)) {}

  Result<HttpResponse> Add(const HttpRequest& req, RequestContext& ctx) const {
    auto parsed = ParseMemoryAdd(req.body, PathWorkspace(ctx), limits_);
    if (!parsed.ok()) return parsed.status();
    // Answered once the event is durable, from the thread that made it so.
    return DeferredResponse(ctx, [service = service_,
                                  add = std::move(*parsed)](DeferredFinish finish) {
      service->AddAsync(add, [finish = std::move(finish)](Result<std::string> id) {
        if (!id.ok()) return finish(id.status());
        finish(JsonResponse(
            200, json{{"message", "Memory creation accepted; poll the event endpoint for status."},
                      {"status", JobStatusName(JobStatus::kPending, JobVocabulary::kMemoryEvent)},
                      {"event_id", *id}}));
      });
    });
  }

  Result<HttpResponse> Event(const HttpRequest&, RequestContext& ctx) const {
    auto event = service_->GetEvent(PathWorkspace(ctx), ctx.params.at("event_id"));
    if (!event.ok()) return event.status();
    return JsonResponse(200, RenderEvent(*event));
  }

  Result<HttpResponse> Events(const HttpRequest& req, RequestContext& ctx) const {
    // An event carries its results: pages are shorter than memory lists'.
    auto page = PageOnlyQuery(req.query, 20, 100);
    if (!page.ok()) return page.status();
    size_t total = 0;
    auto events = service_->ListEvents(PathWorkspace(ctx), page->number, page->size, &total);
    if (!events.ok()) return events.status();
    json results = json::array();
    for (const auto& e : *events) results.push_back(RenderEvent(e));
    return JsonResponse(200, ListPageBody(std::move(results), total, page->number, page->size));
  }

  Result<HttpResponse> Search(const HttpRequest& req, RequestContext& ctx) const {
    auto parsed = ParseMemorySearch(req.body, PathWorkspace(ctx), limits_);
    if (!parsed.ok()) return parsed.status();
    auto hits = service_->Search(*parsed);
    if (!hits.ok()) return hits.status();
    json results = json::array();
    for (const auto& h : *hits) {
      json item = RenderMemory(h.memory);
      item["score"] = h.score;
      if (h.explain) item["explain"] = ExplanationJson(*h.explain);
      results.push_back(std::move(item));
    }
    return JsonResponse(200, json{{"results", std::move(results)}});
  }

  Result<HttpResponse> List(const HttpRequest& req, RequestContext& ctx) const {
    auto q = ReadScopedPage(req);
    if (!q.ok()) return q.status();
    size_t total = 0;
    auto list = service_->List(PathWorkspace(ctx), q->filter, q->page.number, q->page.size, &total);
    if (!list.ok()) return list.status();
    json results = json::array();
    for (const auto& m : *list) results.push_back(RenderMemory(m));
    return JsonResponse(200, ListPageBody(std::move(results), total, q->page.number, q->page.size));
  }

  Result<HttpResponse> Entities(const HttpRequest& req, RequestContext& ctx) const {
    auto q = ReadScopedPage(req);
    if (!q.ok()) return q.status();
    size_t total = 0;
    auto entities = service_->NamedEntities(PathWorkspace(ctx), q->filter, q->page.number,
                                            q->page.size, &total);
    if (!entities.ok()) return entities.status();
    json results = json::array();
    for (const CatalogEntity& e : *entities) results.push_back(RenderNamedEntity(e));
    return JsonResponse(200, ListPageBody(std::move(results), total, q->page.number, q->page.size));
  }

  Result<HttpResponse> DeleteAll(const HttpRequest& req, RequestContext& ctx) const {
    auto params = ParseQueryString(req.query);
    if (!params.ok()) return params.status();
    ENGRAM_RETURN_IF_ERROR(CheckKnownQueryParams(*params, {"user_id", "agent_id", "run_id"}));
    auto filter = ScopeFromQuery(*params, limits_);
    if (!filter.ok()) return filter.status();
    auto n = service_->DeleteAll(PathWorkspace(ctx), *filter);
    if (!n.ok()) return n.status();
    return JsonResponse(
        200, json{{"message", fmt::format("{} memories deleted", *n)}, {"deleted_count", *n}});
  }

  Result<HttpResponse> Get(const HttpRequest&, RequestContext& ctx) const {
    auto m = service_->Get(PathWorkspace(ctx), ctx.params.at("memory_id"));
    if (!m.ok()) return m.status();
    return JsonResponse(200, RenderMemory(*m));
  }

  Result<HttpResponse> Update(const HttpRequest& req, RequestContext& ctx) const {
    auto parsed =
        ParseMemoryUpdate(req.body, PathWorkspace(ctx), ctx.params.at("memory_id"), limits_);
    if (!parsed.ok()) return parsed.status();
    auto m = service_->Update(*parsed);
    if (!m.ok()) return m.status();
    return JsonResponse(200, RenderMemory(*m, "text"));
  }

  Result<HttpResponse> Delete(const HttpRequest&, RequestContext& ctx) const {
    const std::string& id = ctx.params.at("memory_id");
    ENGRAM_RETURN_IF_ERROR(service_->Delete(PathWorkspace(ctx), id));
    return JsonResponse(200, json{{"message", fmt::format("Memory {} deleted successfully", id)}});
  }

  Result<HttpResponse> History(const HttpRequest&, RequestContext& ctx) const {
    auto history = service_->History(PathWorkspace(ctx), ctx.params.at("memory_id"));
    if (!history.ok()) return history.status();
    json results = json::array();
    const std::vector<VersionTime> times = VersionTimes(*history);
    for (size_t i = 0; i < history->size(); ++i) {
      const HistoryRecord& h = (*history)[i];
      results.push_back({{"memory_id", h.memory_id},
                         {"event", h.event},
                         {"old_memory", TextOrNull(h.old_text)},
                         {"new_memory", TextOrNull(h.new_text)},
                         {"old_metadata", MetadataOrNull(h.old_metadata_json)},
                         {"new_metadata", MetadataOrNull(h.new_metadata_json)},
                         {"event_id", IdString(h.event_id)},
                         {"created_at", FormatIsoMicros(h.at_us)},
                         {"valid_from", IsoOrNull(times[i].valid_from_us)},
                         {"valid_to", IsoOrNull(times[i].valid_to_us)},
                         {"provenance", ProvenanceToJson(h.provenance_json)}});
    }
    return JsonResponse(200, json{{"results", std::move(results)}});
  }

 private:
  // A scope and a page from the query string (user_id / agent_id / run_id, page_number,
  // page_size), as the listings read them; any other parameter is refused by name.
  struct ScopedPage {
    MemoryFilter filter;
    PageQuery page;
  };
  Result<ScopedPage> ReadScopedPage(const HttpRequest& req) const {
    auto params = ParseQueryString(req.query);
    if (!params.ok()) return params.status();
    ENGRAM_RETURN_IF_ERROR(CheckKnownQueryParams(
        *params, {"user_id", "agent_id", "run_id", "page_number", "page_size"}));
    auto filter = ScopeFromQuery(*params, limits_);
    if (!filter.ok()) return filter.status();
    auto page = PageQueryParams(*params, 50, static_cast<size_t>(limits_.max_page_size));
    if (!page.ok()) return page.status();
    return ScopedPage{std::move(*filter), *page};
  }

  MemoryService* service_;
  MemoryApiLimits limits_;
};

}  // namespace

json RenderNamedEntity(const CatalogEntity& e) {
  return {{"name", e.name},
          {"kind", EntityKindName(e.kind)},
          {"aliases", e.aliases},
          {"memory_count", e.texts},
          {"first_seen", FormatIsoMicros(e.first_seen_us)},
          {"last_seen", FormatIsoMicros(e.last_seen_us)}};
}

void RegisterMemoryRoutes(Router& router, MemoryService* service, MemoryApiLimits limits) {
  const std::string p = kPrefix;
  auto h = std::make_shared<const MemoryHandlers>(service, std::move(limits));
  using H = MemoryHandlers;
  // An add only parses and queues: it runs on the I/O thread that read it. A search computes on
  // the workspace's shard; a cold one is loaded from the store first, on a worker.
  router.Add({.method = "POST",
              .pattern = p + "/memories/add",
              .name = "memory_add",
              .handler = BindHandler(h, &H::Add),
              .runs_inline = true});
  router.Add({.method = "GET",
              .pattern = p + "/events/{event_id}",
              .name = "memory_event",
              .handler = BindHandler(h, &H::Event)});
  router.Add({.method = "GET",
              .pattern = p + "/events",
              .name = "memory_event_list",
              .handler = BindHandler(h, &H::Events)});
  router.Add({.method = "POST",
              .pattern = p + "/memories/search",
              .name = "memory_search",
              .handler = BindHandler(h, &H::Search),
              .compute_bound = true,
              .ready = RouteWorkspaceLoadedProbe(service)});
  router.Add({.method = "GET",
              .pattern = p + "/memories",
              .name = "memory_list",
              .handler = BindHandler(h, &H::List)});
  router.Add({.method = "GET",
              .pattern = p + "/entities",
              .name = "memory_entity_list",
              .handler = BindHandler(h, &H::Entities)});
  router.Add({.method = "DELETE",
              .pattern = p + "/memories",
              .name = "memory_delete_all",
              .handler = BindHandler(h, &H::DeleteAll)});
  router.Add({.method = "GET",
              .pattern = p + "/memories/{memory_id}",
              .name = "memory_get",
              .handler = BindHandler(h, &H::Get)});
  router.Add({.method = "PUT",
              .pattern = p + "/memories/{memory_id}",
              .name = "memory_update",
              .handler = BindHandler(h, &H::Update)});
  router.Add({.method = "DELETE",
              .pattern = p + "/memories/{memory_id}",
              .name = "memory_delete",
              .handler = BindHandler(h, &H::Delete)});
  router.Add({.method = "GET",
              .pattern = p + "/memories/{memory_id}/history",
              .name = "memory_history",
              .handler = BindHandler(h, &H::History)});
}

}  // namespace engram
