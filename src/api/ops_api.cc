#include "api/ops_api.h"

#include <nlohmann/json.hpp>

#include "api/envelope.h"

namespace engram {

void RegisterOpsRoutes(Router& router, Store* store, Metrics* metrics) {
  router.Add({.method = "GET",
              .pattern = "/healthz",
              .name = "healthz",
              .auth = AuthMode::kNone,
              .handler = [store](const HttpRequest&, RequestContext&) -> Result<HttpResponse> {
                HttpResponse r;
                r.content_type = "text/plain; charset=utf-8";
                Status st = store->CheckWritable();
                r.status = st.ok() ? 200 : 503;
                r.body = st.ok() ? "ok" : "unavailable";
                AddRetryAfter(r);
                return r;
              }});
  router.Add({.method = "GET",
              .pattern = "/v3/openapi/workspaces/{workspace}/memory/{service_id}/health",
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
              .handler = [](const HttpRequest&, RequestContext&) -> Result<HttpResponse> {
                HttpResponse r;
                r.body = OpenApiDocument();
                return r;
              }});
}

}  // namespace engram
