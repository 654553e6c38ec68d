#include "api/ops_api.h"

#include <nlohmann/json.hpp>

#include "api/envelope.h"
#include "common/build_info.h"

namespace engram {

namespace {

// The compiled-in document with this build's version in info.version: the checked-in file cannot
// go stale when the version changes.
std::string VersionedOpenApiDocument() {
  nlohmann::json doc = nlohmann::json::parse(OpenApiDocument());
  doc["info"]["version"] = std::string(GetBuildInfo().version);
  return doc.dump(2);
}

}  // namespace

void RegisterOpsRoutes(Router& router, Store* store, Metrics* metrics) {
  router.Add({.method = "GET",
              .pattern = "/healthz",
              .name = "healthz",
              .auth = AuthMode::kNone,
              .handler = [store](const HttpRequest&, RequestContext&) -> Result<HttpResponse> {
                HttpResponse r;
                r.content_type = "text/plain; charset=utf-8";
                r.headers.emplace_back("X-Engram-Version", std::string(GetBuildInfo().version));
                Status st = store->CheckWritable();
                r.status = st.ok() ? 200 : 503;
                r.body = st.ok() ? "ok" : "unavailable";
                AddRetryAfter(r);
                return r;
              }});
  router.Add({.method = "GET",
              .pattern = "/v3/openapi/workspaces/{workspace_name}/memory/{service_id}/health",
              .name = "v3_health",
              .handler = [store](const HttpRequest&, RequestContext& ctx) -> Result<HttpResponse> {
                Status st = store->CheckWritable();
                return V3Response({{"status", st.ok() ? "healthy" : "unhealthy"}}, ctx.request_id,
                                  ctx.ElapsedMs(), st.ok() ? 200 : 503);
              }});
  router.Add({.method = "GET",
              .pattern = "/metrics",
              .name = "metrics",
              // The text names every workspace (per-workspace series): with keys configured only
              // a key for all of them may read it. Prometheus sends it with
              // `authorization: {credentials: KEY}` in its scrape config.
              .auth = AuthMode::kAllWorkspaces,
              .handler = [metrics](const HttpRequest&, RequestContext&) -> Result<HttpResponse> {
                HttpResponse r;
                r.content_type = "text/plain; version=0.0.4; charset=utf-8";
                r.body = metrics->Render();
                return r;
              }});
  router.Add({.method = "GET",
              .pattern = "/openapi.json",
              .name = "openapi",
              .auth = AuthMode::kNone,
              .handler = [document = VersionedOpenApiDocument()](
                             const HttpRequest&, RequestContext&) -> Result<HttpResponse> {
                HttpResponse r;
                r.body = document;
                return r;
              }});
}

}  // namespace engram
