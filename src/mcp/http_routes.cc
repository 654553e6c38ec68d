#include "mcp/http_routes.h"

#include "common/json_reader.h"
#include "mcp/json_rpc.h"

namespace engram::mcp {

namespace {

// The workspace a request runs in: the path's, else the header's, else "default". A header that
// contradicts the path is refused rather than one of them silently winning.
Result<std::string> ResolveWorkspace(const HttpRequest& request, const RequestContext& ctx) {
  const std::string* header = request.Header(kWorkspaceHeader);
  if (auto it = ctx.params.find("workspace"); it != ctx.params.end()) {
    if (header != nullptr && *header != it->second) {
      return Status::InvalidParameter("X-Engram-Workspace names another workspace than the path");
    }
    return it->second;
  }
  if (header != nullptr) return *header;
  return std::string("default");
}

HttpResponse BadWorkspace(const Status& status) {
  HttpResponse r;
  r.status = 400;
  r.body = DumpJson(ErrorResponse(nullptr, kTransportError, "Bad Request: " + status.message()));
  return r;
}

}  // namespace

void RegisterMcpRoutes(Router& router, HttpEndpoint* endpoint) {
  struct Mount {
    const char* pattern;
    const char* name;
    // Route::doc of the POST route; GET and DELETE are documented as `name`_get, `name`_delete.
    const char* post_doc;
  };
  for (const Mount& m :
       {Mount{"/mcp", "mcp", "mcp_post"},
        Mount{"/v1/agentic-memory/mcp", "mcp", "mcp_agentic_memory_post"},
        Mount{"/mcp/workspaces/{workspace}", "mcp_workspace", "mcp_workspace_post"}}) {
    const bool in_path = std::string_view(m.pattern).find("{workspace}") != std::string_view::npos;
    Route base{.pattern = m.pattern,
               .name = m.name,
               .auth = AuthMode::kApiKey,
               .fixed_workspace = in_path ? "" : "default",
               .workspace_header = in_path ? "" : kWorkspaceHeader};
    Route post = base;
    post.method = "POST";
    post.doc = m.post_doc;
    // Reads (recall, searches, lists) compute on memory and the local store like REST searches;
    // calls that may wait are sent on to a worker by the endpoint (Protocol::MayWait).
    post.compute_bound = true;
    post.handler = [endpoint](const HttpRequest& req, RequestContext& ctx) -> Result<HttpResponse> {
      auto ws = ResolveWorkspace(req, ctx);
      if (!ws.ok()) return BadWorkspace(ws.status());
      return endpoint->Post(req, *ws);
    };
    Route del = base;
    del.method = "DELETE";
    del.doc = std::string(m.name) + "_delete";
    del.handler = [endpoint](const HttpRequest& req, RequestContext& ctx) -> Result<HttpResponse> {
      auto ws = ResolveWorkspace(req, ctx);
      if (!ws.ok()) return BadWorkspace(ws.status());
      return endpoint->Delete(req, *ws);
    };
    Route get = base;
    get.method = "GET";
    get.doc = std::string(m.name) + "_get";
    get.handler = [endpoint](const HttpRequest& req, RequestContext&) -> Result<HttpResponse> {
      return endpoint->Get(req);
    };
    router.Add(std::move(post));
    router.Add(std::move(del));
    router.Add(std::move(get));
  }
}

}  // namespace engram::mcp
