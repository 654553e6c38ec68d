// The mem0-compatible API's other routes: ping (the clients' identity check), entities (users,
// agents, apps, runs), feedback, events, and the mem0 features Engram does not have, which answer
// 501 naming the feature rather than pretending to succeed.
#include <fmt/format.h>

#include "api/envelope.h"
#include "api/mem0/mem0_handler_context.h"
#include "api/mem0/mem0_render.h"
#include "api/mem0/mem0_requests.h"

namespace engram {

namespace {

using json = nlohmann::json;

// The organisation every workspace belongs to (Engram has one).
constexpr const char* kOrgId = "engram";

RouteHandler Unsupported(std::string feature) {
  return
      [feature = std::move(feature)](const HttpRequest&, RequestContext&) -> Result<HttpResponse> {
        return Status(StatusCode::kNotImplemented, feature + " are not supported by Engram");
      };
}

// The routes of the workspace's service: its identity, scopes, feedback and events, after their
// request has begun.
class ServiceHandlers {
 public:
  explicit ServiceHandlers(Mem0Context ctx) : ctx_(std::move(ctx)) {}

  Result<HttpResponse> Ping(const HttpRequest&, const Mem0Request& req, RequestContext&) const {
    return JsonResponse(200, json{{"status", "ok"},
                                  {"org_id", kOrgId},
                                  {"project_id", req.workspace},
                                  {"user_email", nullptr}});
  }

  // The users, agents, apps and runs having memories (mem0's entities).
  Result<HttpResponse> Entities(const HttpRequest& http, const Mem0Request& req,
                                RequestContext&) const {
    auto paging = ctx_->Paging(req, ctx_->options().default_page_size);
    if (!paging.ok()) return paging.status();
    const auto [page, size] = *paging;
    auto entities = ctx_->memories().Entities(req.workspace);
    if (!entities.ok()) return entities.status();
    json results = json::array();
    const size_t from = (page - 1) * size;
    for (size_t i = from; i < entities->size() && i < from + size; ++i) {
      results.push_back(RenderMem0Entity((*entities)[i]));
    }
    return JsonResponse(
        200, Mem0Page(std::move(results), entities->size(), page, size, Mem0RequestUrl(http)));
  }

  Result<HttpResponse> DeleteEntity(const HttpRequest&, const Mem0Request& req,
                                    RequestContext& rc) const {
    auto field = Mem0EntityField(rc.params.at("entity_type"));
    if (!field.ok()) return field.status();
    const std::string& name = rc.params.at("entity_name");
    std::map<std::string, std::string> scope = {{*field, name}};
    auto filter = Mem0EntityFilterFromQuery(scope, ctx_->limits());
    if (!filter.ok()) return filter.status();
    auto n = ctx_->memories().DeleteAll(req.workspace, *filter);
    if (!n.ok()) return n.status();
    if (*n == 0) {
      return Status::NotFound(
          fmt::format("{} {} has no memories", rc.params.at("entity_type"), name.substr(0, 256)));
    }
    return JsonResponse(200,
                        json{{"message", "Entity deleted successfully."}, {"deleted_count", *n}});
  }

  Result<HttpResponse> Feedback(const HttpRequest&, const Mem0Request& req, RequestContext&) const {
    auto feedback = ParseMem0Feedback(*req.body, ctx_->limits());
    if (!feedback.ok()) return feedback.status();
    auto saved = ctx_->memories().RecordFeedback(req.workspace, feedback->memory_id,
                                                 feedback->feedback, feedback->reason);
    if (!saved.ok()) return saved.status();
    return JsonResponse(
        200,
        json{{"id", saved->id},
             {"memory_id", saved->memory_id},
             {"feedback", saved->feedback.empty() ? json(nullptr) : json(saved->feedback)},
             {"feedback_reason", saved->reason.empty() ? json(nullptr) : json(saved->reason)}});
  }

  Result<HttpResponse> Events(const HttpRequest& http, const Mem0Request& req,
                              RequestContext&) const {
    auto paging = ctx_->Paging(req, ctx_->options().default_page_size);
    if (!paging.ok()) return paging.status();
    const auto [page, size] = *paging;
    size_t total = 0;
    auto events = ctx_->memories().ListEvents(req.workspace, page, size, &total);
    if (!events.ok()) return events.status();
    json results = json::array();
    for (const auto& e : *events) results.push_back(RenderMem0Event(e));
    return JsonResponse(200, Mem0Page(std::move(results), total, page, size, Mem0RequestUrl(http)));
  }

  Result<HttpResponse> Event(const HttpRequest&, const Mem0Request& req, RequestContext& rc) const {
    auto event = ctx_->memories().GetEvent(req.workspace, rc.params.at("event_id"));
    if (!event.ok()) return event.status();
    return JsonResponse(200, RenderMem0Event(*event));
  }

 private:
  Mem0Context ctx_;
};

}  // namespace

void RegisterMem0ServiceRoutes(Router& router, const Mem0Context& ctx) {
  auto h = std::make_shared<const ServiceHandlers>(ctx);
  using H = ServiceHandlers;
  const Mem0Body kNone = Mem0Body::kNone;
  for (Mem0RouteSpec& spec : std::vector<Mem0RouteSpec>{
           {"GET", "/v1/ping/", "mem0_ping", kNone, BindMem0(h, &H::Ping)},
           {"GET", "/v1/entities/", "mem0_entities", kNone, BindMem0(h, &H::Entities)},
           {"DELETE", "/v2/entities/{entity_type}/{entity_name}/", "mem0_delete_entity", kNone,
            BindMem0(h, &H::DeleteEntity)},
           {"DELETE", "/v1/entities/{entity_type}/{entity_name}/", "mem0_delete_entity", kNone,
            BindMem0(h, &H::DeleteEntity), "mem0_delete_entity_v1"},
           {"POST", "/v1/feedback/", "mem0_feedback", Mem0Body::kJson, BindMem0(h, &H::Feedback)},
           {"GET", "/v1/events/", "mem0_events", kNone, BindMem0(h, &H::Events)},
           {"GET", "/v1/event/{event_id}/", "mem0_event", kNone, BindMem0(h, &H::Event)},
       }) {
    router.Add(MakeMem0Route(ctx, std::move(spec)));
  }

  // --- mem0 features Engram does not have ---
  struct Missing {
    const char* method;
    const char* pattern;
    const char* feature;
    const char* doc;  // Route::doc, one per feature
  };
  static constexpr const char* kProjects =
      "project settings (instructions and categories per project; pass custom_categories and "
      "custom_instructions with each add)";
  static constexpr Missing kMissing[] = {
      {"GET", "/api/v1/orgs/organizations/{org_id}/projects/{project_id}/", kProjects,
       "mem0_unsupported_projects"},
      {"PATCH", "/api/v1/orgs/organizations/{org_id}/projects/{project_id}/", kProjects,
       "mem0_unsupported_projects"},
      {"GET", "/api/v1/webhooks/projects/{project_id}/", "webhooks", "mem0_unsupported_webhooks"},
      {"POST", "/api/v1/webhooks/projects/{project_id}/", "webhooks", "mem0_unsupported_webhooks"},
      {"PUT", "/api/v1/webhooks/{webhook_id}/", "webhooks", "mem0_unsupported_webhooks"},
      {"DELETE", "/api/v1/webhooks/{webhook_id}/", "webhooks", "mem0_unsupported_webhooks"},
      {"POST", "/v1/exports/", "memory exports", "mem0_unsupported_exports"},
      {"POST", "/v1/exports/get/", "memory exports", "mem0_unsupported_exports"},
      {"POST", "/v2/profiles/jobs/", "user profiles", "mem0_unsupported_profiles"},
      {"GET", "/v2/profiles/jobs/{job_id}/", "user profiles", "mem0_unsupported_profiles"},
      {"GET", "/v2/profiles/settings/", "user profiles", "mem0_unsupported_profiles"},
      {"POST", "/v2/profiles/settings/", "user profiles", "mem0_unsupported_profiles"},
      {"GET", "/v2/entities/{entity_type}/{entity_name}/profile/", "user profiles",
       "mem0_unsupported_profiles"},
  };
  for (const Missing& m : kMissing) {
    Route r = ctx->MakeRoute(m.method, m.pattern, "mem0_unsupported", Unsupported(m.feature));
    r.doc = m.doc;
    router.Add(std::move(r));
  }
}

}  // namespace engram
