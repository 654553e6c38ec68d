// The memory routes of the mem0-compatible API: add, search, list, get, update, delete, delete
// by entity, history and the batch operations, for both client generations (3.x: /v3/memories/*;
// 2.x: /v1/memories/* and /v2/memories/*).
#include <fmt/format.h>

#include <chrono>
#include <thread>

#include "api/envelope.h"
#include "api/mem0/mem0_handler_context.h"
#include "api/mem0/mem0_render.h"
#include "api/mem0/mem0_requests.h"
#include "common/job_status.h"

namespace engram {

namespace {

using json = nlohmann::json;

constexpr const char* kQueuedMessage = "Memory processing has been queued for background execution";

json Accepted(const std::string& event_id) {
  return {{"message", kQueuedMessage},
          {"status", JobStatusName(JobStatus::kPending, JobVocabulary::kMemoryEvent)},
          {"event_id", event_id}};
}

// 2.x with async_mode: false: the add answers what its extraction did. Runs on a worker thread
// (the caller checked); waits at most options().sync_add_timeout, then answers the queued form.
Result<HttpResponse> AddAndWait(const Mem0HandlerContext& ctx, const MemoryAddRequest& add) {
  auto id = ctx.memories().Add(add);
  if (!id.ok()) return id.status();
  const auto deadline = std::chrono::steady_clock::now() + ctx.options().sync_add_timeout;
  auto pause = std::chrono::milliseconds(2);
  while (std::chrono::steady_clock::now() < deadline) {
    auto event = ctx.memories().GetEvent(add.workspace, *id);
    if (!event.ok()) return event.status();
    if (event->status == JobStatus::kSucceeded) {
      return JsonResponse(200, Mem0EventResults(*event));
    }
    if (event->status == JobStatus::kFailed) {
      return Status::Unavailable(
          fmt::format("memory extraction of event {} failed: {}", *id, event->error_message));
    }
    std::this_thread::sleep_for(pause);
    pause = std::min(pause * 2, std::chrono::milliseconds(50));
  }
  return JsonResponse(200, json::array({Accepted(*id)}));
}

// Whether an add answers only once its extraction is done (2.x with async_mode: false).
bool WaitsForExtraction(const Mem0Add& add, bool v3) { return !v3 && !add.async_mode; }

RouteHandler AddHandler(const Mem0Context& ctx, bool v3) {
  return ParsedHandler<Mem0Add>(
      {.parse = [ctx](const HttpRequest& http, RequestContext&) -> Result<Mem0Add> {
         auto req = ctx->Begin(http, true);
         if (!req.ok()) return req.status();
         const bool follows =
             ctx->extractor() != nullptr && ctx->extractor()->follows_instructions();
         return ParseMem0Add(*req->body, req->workspace, ctx->limits(), follows);
       },
       // An add that waits for its extraction does not run on an I/O thread.
       .ready = [v3](const Mem0Add& add) { return !WaitsForExtraction(add, v3); },
       .run = [ctx, v3](Mem0Add&& add, const HttpRequest&,
                        RequestContext& rc) -> Result<HttpResponse> {
         if (WaitsForExtraction(add, v3)) return AddAndWait(*ctx, add.request);
         // Answered once the event is durable, from the thread that made it so.
         return DeferredResponse(
             rc,
             [ctx, v3, request = std::move(add.request)](DeferredFinish finish) {
               ctx->memories().AddAsync(
                   request, [finish = std::move(finish), v3](Result<std::string> id) {
                     if (!id.ok()) return finish(id.status());
                     finish(JsonResponse(200, v3 ? Accepted(*id) : json::array({Accepted(*id)})));
                   });
             },
             Mem0ErrorResponse);
       }});
}

RouteHandler SearchHandler(const Mem0Context& ctx, bool v3) {
  return ParsedHandler<Mem0Search>(
      {.parse = [ctx, v3](const HttpRequest& http, RequestContext&) -> Result<Mem0Search> {
         auto req = ctx->Begin(http, true);
         if (!req.ok()) return req.status();
         return ParseMem0Search(*req->body, req->workspace, ctx->limits(), v3);
       },
       // A cold workspace is loaded from the store first: not on an I/O thread.
       .ready =
           [ctx](const Mem0Search& search) {
             return ctx->memories().WorkspaceLoaded(search.request.workspace);
           },
       .run = [ctx](Mem0Search&& search, const HttpRequest&,
                    RequestContext&) -> Result<HttpResponse> {
         auto hits = ctx->memories().Search(search.request);
         if (!hits.ok()) return hits.status();
         json results = json::array();
         for (const auto& h : *hits) {
           json item = RenderMem0Memory(h.memory);
           item["score"] = h.score;
           results.push_back(ProjectMem0Fields(std::move(item), search.fields));
         }
         if (search.results_object) return JsonResponse(200, json{{"results", std::move(results)}});
         return JsonResponse(200, results);
       }});
}

// The routes that read or change stored memories, after their request has begun.
class MemoryHandlers {
 public:
  explicit MemoryHandlers(Mem0Context ctx) : ctx_(std::move(ctx)) {}

  // 3.x getAll: the body's filters; always a page {count, next, previous, results}.
  Result<HttpResponse> ListV3(const HttpRequest& http, const Mem0Request& req,
                              RequestContext&) const {
    auto filter = ParseMem0ListBody(*req.body, ctx_->limits());
    if (!filter.ok()) return filter.status();
    return ListPage(http, req, *filter, true);
  }
  // 2.x getAll with filters in the body: a page when paging was asked for, else an array.
  Result<HttpResponse> ListV2(const HttpRequest& http, const Mem0Request& req,
                              RequestContext&) const {
    auto filter = ParseMem0ListBody(*req.body, ctx_->limits());
    if (!filter.ok()) return filter.status();
    return ListPage(http, req, *filter, HasPaging(req));
  }
  // 2.x getAll with the entity in the query string.
  Result<HttpResponse> ListV1(const HttpRequest& http, const Mem0Request& req,
                              RequestContext&) const {
    auto filter = Mem0EntityFilterFromQuery(req.query, ctx_->limits());
    if (!filter.ok()) return filter.status();
    return ListPage(http, req, *filter, HasPaging(req));
  }

  Result<HttpResponse> DeleteAll(const HttpRequest&, const Mem0Request& req,
                                 RequestContext&) const {
    auto filter = Mem0EntityFilterFromQuery(req.query, ctx_->limits());
    if (!filter.ok()) return filter.status();
    auto n = ctx_->memories().DeleteAll(req.workspace, *filter);
    if (!n.ok()) return n.status();
    return JsonResponse(200,
                        json{{"message", "Memories deleted successfully!"}, {"deleted_count", *n}});
  }

  Result<HttpResponse> Get(const HttpRequest&, const Mem0Request& req, RequestContext& rc) const {
    auto m = ctx_->memories().Get(req.workspace, rc.params.at("memory_id"));
    if (!m.ok()) return m.status();
    return JsonResponse(200, RenderMem0Memory(*m));
  }

  Result<HttpResponse> Update(const HttpRequest&, const Mem0Request& req,
                              RequestContext& rc) const {
    auto update =
        ParseMem0Update(*req.body, req.workspace, rc.params.at("memory_id"), ctx_->limits());
    if (!update.ok()) return update.status();
    auto m = ctx_->memories().Update(*update);
    if (!m.ok()) return m.status();
    return JsonResponse(200, RenderMem0Memory(*m));
  }

  Result<HttpResponse> Delete(const HttpRequest&, const Mem0Request& req,
                              RequestContext& rc) const {
    ENGRAM_RETURN_IF_ERROR(ctx_->memories().Delete(req.workspace, rc.params.at("memory_id")));
    return JsonResponse(200, json{{"message", "Memory deleted successfully!"}});
  }

  Result<HttpResponse> History(const HttpRequest&, const Mem0Request& req,
                               RequestContext& rc) const {
    const std::string& id = rc.params.at("memory_id");
    auto history = ctx_->memories().History(req.workspace, id);
    if (!history.ok()) return history.status();
    auto current = ctx_->memories().Get(req.workspace, id);  // gone after a delete
    json rows = json::array();
    for (const auto& h : *history) {
      rows.push_back(RenderMem0History(h, current.ok() ? &*current : nullptr));
    }
    return JsonResponse(200, rows);
  }

  Result<HttpResponse> BatchUpdate(const HttpRequest&, const Mem0Request& req,
                                   RequestContext&) const {
    auto items = ParseMem0Batch(*req.body, true, ctx_->options().max_batch, ctx_->limits());
    if (!items.ok()) return items.status();
    ENGRAM_RETURN_IF_ERROR(RequireMemories(req.workspace, *items));
    for (const auto& item : *items) {
      MemoryUpdateRequest update;
      update.workspace = req.workspace;
      update.id = item.memory_id;
      update.text = item.text;
      auto m = ctx_->memories().Update(update);
      if (!m.ok()) return m.status();
    }
    return JsonResponse(
        200, json{{"message", fmt::format("Successfully updated {} memories", items->size())}});
  }

  Result<HttpResponse> BatchDelete(const HttpRequest&, const Mem0Request& req,
                                   RequestContext&) const {
    auto items = ParseMem0Batch(*req.body, false, ctx_->options().max_batch, ctx_->limits());
    if (!items.ok()) return items.status();
    ENGRAM_RETURN_IF_ERROR(RequireMemories(req.workspace, *items));
    for (const auto& item : *items) {
      ENGRAM_RETURN_IF_ERROR(ctx_->memories().Delete(req.workspace, item.memory_id));
    }
    return JsonResponse(
        200, json{{"message", fmt::format("Successfully deleted {} memories", items->size())}});
  }

 private:
  // A page of the memories matching `filter`. `paginated`: answer {count, next, previous,
  // results}; else a bare array of the first page.
  Result<HttpResponse> ListPage(const HttpRequest& http, const Mem0Request& req,
                                const MemoryFilter& filter, bool paginated) const {
    auto paging = ctx_->Paging(req, paginated ? ctx_->options().default_page_size
                                              : static_cast<size_t>(ctx_->limits().max_page_size));
    if (!paging.ok()) return paging.status();
    const auto [page, size] = *paging;
    size_t total = 0;
    auto list = ctx_->memories().List(req.workspace, filter, page, size, &total);
    if (!list.ok()) return list.status();
    json results = json::array();
    for (const auto& m : *list) results.push_back(RenderMem0Memory(m));
    if (!paginated) return JsonResponse(200, results);
    return JsonResponse(200, Mem0Page(std::move(results), total, page, size, Mem0RequestUrl(http)));
  }

  static bool HasPaging(const Mem0Request& req) {
    return req.query.count("page") != 0 || req.query.count("page_size") != 0;
  }

  // Every memory of a batch is found before any changes, so a wrong id changes nothing.
  Status RequireMemories(const std::string& workspace,
                         const std::vector<Mem0BatchItem>& items) const {
    for (const auto& item : items) {
      auto m = ctx_->memories().Get(workspace, item.memory_id);
      if (!m.ok()) return m.status();
    }
    return Status::Ok();
  }

  Mem0Context ctx_;
};

}  // namespace

void RegisterMem0MemoryRoutes(Router& router, const Mem0Context& ctx) {
  // --- add ---
  Route add_v3 = ctx->MakeRoute("POST", "/v3/memories/add/", "mem0_add", AddHandler(ctx, true));
  add_v3.doc = "mem0_add_v3";
  add_v3.runs_inline = true;
  router.Add(std::move(add_v3));
  Route add_v1 = ctx->MakeRoute("POST", "/v1/memories/", "mem0_add", AddHandler(ctx, false));
  add_v1.doc = "mem0_add_v1";
  add_v1.runs_inline = true;
  router.Add(std::move(add_v1));

  // --- search ---
  struct Search {
    const char* pattern;
    bool v3;
    const char* doc;
  };
  for (auto [pattern, v3, doc] : {Search{"/v3/memories/search/", true, "mem0_search_v3"},
                                  Search{"/v2/memories/search/", false, "mem0_search_v2"},
                                  Search{"/v1/memories/search/", false, "mem0_search_v1"}}) {
    Route r = ctx->MakeRoute("POST", pattern, "mem0_search", SearchHandler(ctx, v3));
    r.doc = doc;
    r.compute_bound = true;
    router.Add(std::move(r));
  }

  // --- the rest: one line a route ---
  auto h = std::make_shared<const MemoryHandlers>(ctx);
  using H = MemoryHandlers;
  const Mem0Body kNone = Mem0Body::kNone;
  const Mem0Body kJson = Mem0Body::kJson;
  for (Mem0RouteSpec& spec : std::vector<Mem0RouteSpec>{
           {"POST", "/v3/memories/", "mem0_list", kJson, BindMem0(h, &H::ListV3), "mem0_list_v3"},
           {"POST", "/v2/memories/", "mem0_list", kJson, BindMem0(h, &H::ListV2), "mem0_list_v2"},
           {"GET", "/v1/memories/", "mem0_list", kNone, BindMem0(h, &H::ListV1), "mem0_list_v1"},
           {"DELETE", "/v1/memories/", "mem0_delete_all", kNone, BindMem0(h, &H::DeleteAll)},
           {"GET", "/v1/memories/{memory_id}/", "mem0_get", kNone, BindMem0(h, &H::Get)},
           {"PUT", "/v1/memories/{memory_id}/", "mem0_update", kJson, BindMem0(h, &H::Update)},
           {"DELETE", "/v1/memories/{memory_id}/", "mem0_delete", kNone, BindMem0(h, &H::Delete)},
           {"GET", "/v1/memories/{memory_id}/history/", "mem0_history", kNone,
            BindMem0(h, &H::History)},
           {"PUT", "/v1/batch/", "mem0_batch_update", kJson, BindMem0(h, &H::BatchUpdate)},
           {"DELETE", "/v1/batch/", "mem0_batch_delete", kJson, BindMem0(h, &H::BatchDelete)},
       }) {
    router.Add(MakeMem0Route(ctx, std::move(spec)));
  }
}

}  // namespace engram
