#include "api/mem0/mem0_api.h"

#include "api/json_input.h"
#include "api/mem0/mem0_handler_context.h"
#include "api/mem0/mem0_render.h"
#include "api/mem0/mem0_workspace.h"
#include "api/memory_fields.h"
#include "api/query_params.h"

namespace engram {

Result<Mem0Request> Mem0HandlerContext::Begin(const HttpRequest& request, bool with_body) const {
  Mem0Request out;
  auto query = ParseQueryString(request.query);
  if (!query.ok()) return query.status();
  out.query = std::move(*query);
  if (with_body) {
    if (request.body.find_first_not_of(" \t\r\n") == std::string::npos) {
      out.body = nlohmann::json::object();
    } else {
      auto body = ParseJsonObject(request.body);
      if (!body.ok()) return body.status();
      out.body = std::move(*body);
    }
  }
  auto workspace = ResolveMem0Workspace(request, out.query, out.body ? &*out.body : nullptr,
                                        *deps_.auth, options_.default_workspace);
  if (!workspace.ok()) return workspace.status();
  out.workspace = std::move(*workspace);
  return out;
}

Result<Mem0Paging> Mem0HandlerContext::Paging(const Mem0Request& request,
                                              size_t default_size) const {
  auto page = PositiveQueryParam(request.query, "page", 1, 1000000);
  if (!page.ok()) return page.status();
  auto size = PositiveQueryParam(request.query, "page_size", default_size,
                                 static_cast<size_t>(options_.limits.max_page_size));
  if (!size.ok()) return size.status();
  return Mem0Paging{*page, *size};
}

Route Mem0HandlerContext::MakeRoute(std::string method, std::string pattern, std::string name,
                                    RouteHandler handler) const {
  return Route{.method = std::move(method),
               .pattern = std::move(pattern),
               .name = std::move(name),
               .auth = AuthMode::kAnyWorkspace,
               .handler = std::move(handler),
               .render_error = Mem0ErrorResponse};
}

Route MakeMem0Route(const Mem0Context& ctx, Mem0RouteSpec spec) {
  const bool with_body = spec.body == Mem0Body::kJson;
  Route route =
      ctx->MakeRoute(spec.method, spec.pattern, spec.name,
                     [ctx, with_body, handler = std::move(spec.handler)](
                         const HttpRequest& http, RequestContext& rc) -> Result<HttpResponse> {
                       auto req = ctx->Begin(http, with_body);
                       if (!req.ok()) return req.status();
                       return handler(http, *req, rc);
                     });
  route.doc = spec.doc;
  return route;
}

void RegisterMem0Routes(Router& router, Mem0ApiDeps deps, Mem0ApiOptions options) {
  auto ctx = std::make_shared<const Mem0HandlerContext>(deps, std::move(options));
  RegisterMem0MemoryRoutes(router, ctx);
  RegisterMem0ServiceRoutes(router, ctx);
}

}  // namespace engram
