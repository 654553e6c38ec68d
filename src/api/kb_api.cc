#include "api/kb_api.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstdint>
#include <memory>
#include <nlohmann/json.hpp>
#include <span>

#include "api/envelope.h"
#include "api/json_input.h"
#include "api/query_params.h"
#include "api/search_explanation_json.h"
#include "common/codec.h"
#include "common/job_status.h"
#include "common/time_util.h"

namespace engram {

namespace {

using json = nlohmann::json;

constexpr const char* kKnowledgeBases =
    "/v3/openapi/workspaces/{workspace_name}/memory/{service_id}/knowledge-bases";

// Ids travel in URL paths: printable, no '/', not blank.
Status CheckId(const std::string& value, std::string_view name, const KbApiLimits& limits) {
  if (value.empty() || IsBlank(value))
    return Status::InvalidParameter(fmt::format("{} must not be empty", name));
  if (value.size() > limits.max_id_bytes) {
    return Status::InvalidParameter(fmt::format("{} is too long: {} bytes, at most {} allowed",
                                                name, value.size(), limits.max_id_bytes));
  }
  if (!IsValidUtf8(value))
    return Status::InvalidParameter(fmt::format("{} must be valid UTF-8", name));
  for (unsigned char c : value) {
    if (c < 0x20 || c == 0x7F || c == '/' || c == '\\' || c == '?' || c == '#') {
      return Status::InvalidParameter(
          fmt::format("{} must not contain control characters or any of / \\ ? #", name));
    }
  }
  return Status::Ok();
}

json RenderListItem(const KbDocRecord& d) {
  return {{"id", d.id},
          {"title", d.title},
          {"timestamp", FormatIsoMicros(d.created_at_us)},
          {"status", JobStatusName(d.status, JobVocabulary::kKbDocument)}};
}

}  // namespace

Result<KbUploadRequest> ParseKbUpload(std::string_view body, const std::string& workspace,
                                      const std::string& kb_id, const KbApiLimits& limits) {
  auto parsed = ParseJsonObject(body);
  if (!parsed.ok()) return parsed.status();
  const json& j = *parsed;
  KbUploadRequest req;
  req.workspace = workspace;
  req.kb_id = kb_id;
  auto type = GetString(j, "type", "type", {.max_bytes = 16});
  if (!type.ok()) return type.status();
  const bool by_content = **type == "CONTENT";
  if (**type == "LOCAL") {
    req.type = DocSourceType::kLocal;
  } else if (**type == "OSS") {
    req.type = DocSourceType::kOss;
  } else if (!by_content) {
    return Status::InvalidParameter("type must be LOCAL, OSS or CONTENT");
  }
  auto doc = j.find("doc");
  if (doc == j.end() || doc->is_null()) return Status::InvalidParameter("doc is required");
  if (!doc->is_object()) {
    return Status::InvalidParameter(
        fmt::format("doc must be an object with title and {}, got {}",
                    by_content ? "file_name and content_base64" : "file_url", JsonTypeName(*doc)));
  }
  auto id = GetString(*doc, "id", "doc.id", {.required = false, .max_bytes = limits.max_id_bytes});
  if (!id.ok()) return id.status();
  if (*id) {
    ENGRAM_RETURN_IF_ERROR(CheckId(**id, "doc.id", limits));
    req.id = **id;
  }
  auto title = GetString(*doc, "title", "doc.title", {.max_bytes = limits.max_title_bytes});
  if (!title.ok()) return title.status();
  if (!IsValidUtf8(**title)) return Status::InvalidParameter("doc.title must be valid UTF-8");
  req.title = **title;
  // A field of the other kind of upload would be ignored: refused, so that a client that meant
  // it learns that it was not read.
  static constexpr const char* kByContentOnly[] = {"file_name", "content_base64"};
  static constexpr const char* kByUrlOnly[] = {"file_url"};
  for (const char* other : by_content ? std::span<const char* const>(kByUrlOnly)
                                      : std::span<const char* const>(kByContentOnly)) {
    if (auto f = doc->find(other); f != doc->end() && !f->is_null()) {
      return Status::InvalidParameter(
          by_content ? fmt::format("doc.{} is read for type LOCAL or OSS; a CONTENT document "
                                   "names its file in doc.file_name",
                                   other)
                     : fmt::format("doc.{} is read for type CONTENT only", other));
    }
  }
  if (by_content) {
    auto name = GetString(*doc, "file_name", "doc.file_name", {.max_bytes = limits.max_id_bytes});
    if (!name.ok()) return name.status();
    ENGRAM_RETURN_IF_ERROR(CheckId(**name, "doc.file_name", limits));
    req.file_url = **name;
    // Bounded by the request body's limit; the decoded size is checked before decoding.
    auto encoded = GetString(*doc, "content_base64", "doc.content_base64", {.max_bytes = SIZE_MAX});
    if (!encoded.ok()) return encoded.status();
    if (Base64DecodedSize(**encoded) > limits.max_upload_bytes) {
      return Status::InvalidParameter(
          fmt::format("doc.content_base64 holds more than {} bytes (--kb-max-doc-bytes)",
                      limits.max_upload_bytes));
    }
    auto bytes = Base64Decode(**encoded, limits.max_upload_bytes);
    if (!bytes) return Status::InvalidParameter("doc.content_base64 must be base64");
    if (bytes->empty()) return Status::InvalidParameter("doc.content_base64 must not be empty");
    req.content = std::move(*bytes);
    return req;
  }
  auto url = GetString(*doc, "file_url", "doc.file_url", {.max_bytes = limits.max_url_bytes});
  if (!url.ok()) return url.status();
  if (!IsValidUtf8(**url)) return Status::InvalidParameter("doc.file_url must be valid UTF-8");
  req.file_url = **url;
  return req;
}

json RenderKbHit(const KbHit& h) {
  return {{"doc_id", h.doc_id},
          {"title", h.title},
          {"chunk", h.chunk},
          {"position", h.position},
          {"score", h.score}};
}

namespace {

// The knowledge-base handlers, one per route, over the service and the request limits they share.
class KbHandlers {
 public:
  KbHandlers(KbService* service, KbApiLimits limits)
      : service_(service), limits_(std::move(limits)) {}

  Result<HttpResponse> ListKnowledgeBases(const HttpRequest& req, RequestContext& ctx) const {
    auto page = PageOnlyQuery(req.query, 20, static_cast<size_t>(limits_.max_page_size));
    if (!page.ok()) return page.status();
    size_t total = 0;
    auto kbs = service_->ListKnowledgeBases(PathWorkspace(ctx), page->number, page->size, &total);
    if (!kbs.ok()) return kbs.status();
    json results = json::array();
    for (const KnowledgeBaseSummary& k : *kbs) {
      results.push_back({{"kb_id", k.kb_id},
                         {"documents", k.documents},
                         {"processing", k.processing},
                         {"failed", k.failed},
                         {"updated_at", FormatIsoMicros(k.updated_at_us)}});
    }
    return V3Response(ListPageBody(std::move(results), total, page->number, page->size),
                      ctx.request_id, ctx.ElapsedMs());
  }

  Result<HttpResponse> Upload(const HttpRequest& req, RequestContext& ctx) const {
    auto kb_id = KbId(ctx);
    if (!kb_id.ok()) return kb_id.status();
    auto parsed = ParseKbUpload(req.body, PathWorkspace(ctx), *kb_id, limits_);
    if (!parsed.ok()) return parsed.status();
    auto id = service_->Upload(*parsed);
    if (!id.ok()) return id.status();
    return V3Response(
        {{"id", *id}, {"status", JobStatusName(JobStatus::kPending, JobVocabulary::kKbDocument)}},
        ctx.request_id, ctx.ElapsedMs());
  }

  Result<HttpResponse> ListDocs(const HttpRequest& req, RequestContext& ctx) const {
    auto kb_id = KbId(ctx);
    if (!kb_id.ok()) return kb_id.status();
    auto page = PageOnlyQuery(req.query, 10, static_cast<size_t>(limits_.max_page_size));
    if (!page.ok()) return page.status();
    size_t total = 0;
    auto docs = service_->List(PathWorkspace(ctx), *kb_id, page->number, page->size, &total);
    if (!docs.ok()) return docs.status();
    json results = json::array();
    for (const auto& d : *docs) results.push_back(RenderListItem(d));
    return V3Response(ListPageBody(std::move(results), total, page->number, page->size),
                      ctx.request_id, ctx.ElapsedMs());
  }

  Result<HttpResponse> GetDoc(const HttpRequest&, RequestContext& ctx) const {
    auto kb_id = KbId(ctx);
    if (!kb_id.ok()) return kb_id.status();
    auto d = service_->Get(PathWorkspace(ctx), *kb_id, ctx.params.at("doc_id"));
    if (!d.ok()) return d.status();
    return V3Response({{"id", d->id},
                       {"title", d->title},
                       {"content", d->content},
                       {"status", JobStatusName(d->status, JobVocabulary::kKbDocument)},
                       {"timestamp", FormatIsoMicros(d->created_at_us)},
                       {"error_message", d->error_message}},
                      ctx.request_id, ctx.ElapsedMs());
  }

  Result<HttpResponse> DeleteDoc(const HttpRequest&, RequestContext& ctx) const {
    auto kb_id = KbId(ctx);
    if (!kb_id.ok()) return kb_id.status();
    const std::string& id = ctx.params.at("doc_id");
    ENGRAM_RETURN_IF_ERROR(service_->Delete(PathWorkspace(ctx), *kb_id, id));
    return V3Response({{"id", id}, {"error_message", ""}}, ctx.request_id, ctx.ElapsedMs());
  }

  Result<HttpResponse> Search(const HttpRequest& req, RequestContext& ctx) const {
    auto kb_id = KbId(ctx);
    if (!kb_id.ok()) return kb_id.status();
    auto parsed = ParseJsonObject(req.body);
    if (!parsed.ok()) return parsed.status();
    auto query = GetString(*parsed, "query", "query", {.max_bytes = limits_.max_query_bytes});
    if (!query.ok()) return query.status();
    if (!IsValidUtf8(**query)) return Status::InvalidParameter("query must be valid UTF-8");
    auto top_k = GetInt(*parsed, "top_k", "top_k", 1, limits_.max_top_k, false);
    if (!top_k.ok()) return top_k.status();
    auto explain = GetBool(*parsed, "explain");
    if (!explain.ok()) return explain.status();
    auto hits =
        service_->Search(PathWorkspace(ctx), *kb_id, **query,
                         static_cast<size_t>(top_k->value_or(10)), explain->value_or(false));
    if (!hits.ok()) return hits.status();
    json results = json::array();
    for (const KbHit& h : *hits) {
      json item = RenderKbHit(h);
      if (h.explain) item["explain"] = ExplanationJson(*h.explain);
      results.push_back(std::move(item));
    }
    return V3Response({{"results", std::move(results)}}, ctx.request_id, ctx.ElapsedMs());
  }

  // Search's Route::ready: a cold knowledge base is loaded from the store first, not on an I/O
  // thread. An invalid kb_id is refused by the handler, on whichever thread.
  bool SearchReady(const HttpRequest&, const RequestContext& ctx) const {
    auto kb_id = KbId(ctx);
    return !kb_id.ok() || service_->KnowledgeBaseLoaded(PathWorkspace(ctx), *kb_id);
  }

 private:
  // The kb_id of the path, validated.
  Result<std::string> KbId(const RequestContext& ctx) const {
    const std::string& id = ctx.params.at("kb_id");
    ENGRAM_RETURN_IF_ERROR(CheckId(id, "kb_id", limits_));
    return id;
  }

  KbService* service_;
  KbApiLimits limits_;
};

}  // namespace

void RegisterKbRoutes(Router& router, KbService* service, KbApiLimits limits) {
  const std::string p = std::string(kKnowledgeBases) + "/{kb_id}";
  auto h = std::make_shared<const KbHandlers>(service, std::move(limits));
  using H = KbHandlers;
  router.Add({.method = "GET",
              .pattern = kKnowledgeBases,
              .name = "kb_list",
              .handler = BindHandler(h, &H::ListKnowledgeBases)});
  router.Add({.method = "POST",
              .pattern = p + "/docs",
              .name = "kb_doc_upload",
              .handler = BindHandler(h, &H::Upload)});
  router.Add({.method = "GET",
              .pattern = p + "/docs",
              .name = "kb_doc_list",
              .handler = BindHandler(h, &H::ListDocs)});
  router.Add({.method = "GET",
              .pattern = p + "/docs/{doc_id}",
              .name = "kb_doc_get",
              .handler = BindHandler(h, &H::GetDoc)});
  router.Add({.method = "DELETE",
              .pattern = p + "/docs/{doc_id}",
              .name = "kb_doc_delete",
              .handler = BindHandler(h, &H::DeleteDoc)});
  router.Add({.method = "POST",
              .pattern = p + "/search",
              .name = "kb_search",
              .handler = BindHandler(h, &H::Search),
              .compute_bound = true,
              .ready = [h](const HttpRequest& req, const RequestContext& ctx) {
                return h->SearchReady(req, ctx);
              }});
}

}  // namespace engram
