#include "console/routes.h"

#include "console/assets.h"

namespace engram::console {

const Asset* FindAsset(std::string_view name) {
  for (const Asset& a : Assets()) {
    if (a.name == name) return &a;
  }
  return nullptr;
}

namespace {

HttpResponse Serve(const Asset& asset) {
  HttpResponse r;
  r.status = 200;
  r.content_type = std::string(asset.content_type);
  r.body = std::string(asset.body);
  r.headers = {{"Content-Security-Policy", kContentSecurityPolicy},
               {"X-Content-Type-Options", "nosniff"},
               {"Referrer-Policy", "no-referrer"},
               {"X-Frame-Options", "DENY"},
               // The files change with the binary: a browser asks again rather than run an old
               // script against a new server.
               {"Cache-Control", "no-cache"}};
  return r;
}

}  // namespace

void RegisterRoutes(Router& router) {
  auto page = [](const HttpRequest&, RequestContext&) -> Result<HttpResponse> {
    return Serve(*FindAsset("index.html"));
  };
  router.Add({.method = "GET",
              .pattern = "/console",
              .name = "console",
              .auth = AuthMode::kNone,
              .handler = page});
  router.Add({.method = "GET",
              .pattern = "/console/{asset}",
              .name = "console_asset",
              .auth = AuthMode::kNone,
              .handler = [](const HttpRequest&, RequestContext& ctx) -> Result<HttpResponse> {
                const Asset* asset = FindAsset(ctx.params.at("asset"));
                if (asset == nullptr) return Status::NotFound("no such console file");
                return Serve(*asset);
              }});
}

}  // namespace engram::console
