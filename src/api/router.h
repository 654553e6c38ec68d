// Router: the one route table. Patterns are literal segments and {name} parameters, e.g.
// "/v4/openapi/workspaces/{workspace_name}/memory/{service_id}/memories/{memory_id}".
// Matching is exact per segment; a path that matches a pattern under another method is a 405.
// Thread-safety: build once, then Match is safe to call concurrently.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "common/status.h"
#include "server/http_types.h"

namespace engram {

// What a handler sees besides the raw request.
struct RequestContext {
  std::string request_id;
  std::unordered_map<std::string, std::string> params;  // path parameters
  double ElapsedMs() const;
  int64_t start_ns = 0;  // steady clock
};

using RouteHandler = std::function<Result<HttpResponse>(const HttpRequest&, RequestContext&)>;

// Renders a refused request (status not OK) in an API family's error envelope.
using ErrorRenderer = std::function<HttpResponse(const Status& status,
                                                 const std::string& request_id, double latency_ms)>;

enum class AuthMode {
  kNone,    // open (health probe, openapi)
  kApiKey,  // needs a valid key when keys are configured
  // Needs a key valid for every workspace when keys are configured: the answer names all of
  // them (metrics), so a workspace-limited key is refused with 403.
  kAllWorkspaces,
  // Needs a valid key when keys are configured, whatever workspaces it is limited to: the handler
  // picks the workspace (from the request's body or the key) and checks the key against it (the
  // mem0-compatible API, whose paths name no workspace).
  kAnyWorkspace,
};

struct Route {
  std::string method;
  std::string pattern;
  std::string name;  // metrics label, e.g. "leaderboard_add"
  // The key of the operation this route documents in its API's OpenAPI fragment (the
  // `*.openapi.json` beside the code that registers it; api/openapi_generator.h); empty: `name`.
  // Routes that share a name but not a description name their own.
  std::string doc;
  AuthMode auth = AuthMode::kApiKey;
  // Workspace the route touches, for key scoping: a fixed name, or empty to take the path's
  // {workspace_name} (or {workspace}) parameter.
  std::string fixed_workspace;
  // A request header (lower-case name) that, when sent, names the workspace instead of
  // fixed_workspace: for routes without a workspace parameter whose clients pick one per request
  // (the MCP endpoint's x-engram-workspace). Checked like a path's name, before the body is read.
  std::string workspace_header;
  RouteHandler handler;
  // The handler computes on memory and the local store only (searches): with a local store and
  // model the server runs it on an I/O thread, one per core at a time
  // (HttpServerOptions::is_compute_bound). Handlers that wait (fsync, model or LLM endpoints) must
  // leave it false.
  bool compute_bound = false;
  // The handler only parses, validates and hands its work to another thread, answering through
  // HttpResponse::deferred (an add answered once its event is durable): with a local store the
  // server runs it on the I/O thread that read it (HttpServerOptions::runs_inline). Handlers that
  // may wait must leave it false.
  bool runs_inline = false;
  // Whether the handler may run on an I/O thread now (compute_bound routes): false while what it
  // reads (a workspace's shard, a knowledge base) is not loaded, so that the request runs on a
  // worker instead, where loading it from the store may wait. Checked once the request is
  // admitted, with ctx.params set, before the handler and before the body is parsed. Null: always.
  std::function<bool(const HttpRequest&, const RequestContext&)> ready;
  // The envelope of this route's errors (refusals before the body too); null: the Agentic
  // Memory envelope (ErrorResponse, api/envelope.h).
  ErrorRenderer render_error;
};

// The workspace a route's path names: its {workspace_name} parameter (the Agentic Memory paths,
// named as the vendor's reference names it).
inline const std::string& PathWorkspace(const RequestContext& ctx) {
  return ctx.params.at("workspace_name");
}

// The Route::ready probe of a route that reads the shard of its {workspace_name} path parameter in
// `service` (memories, skills): whether service->WorkspaceLoaded(that workspace). The twin of
// mcp::WorkspaceLoadedProbe for tools.
template <typename Service>
auto RouteWorkspaceLoadedProbe(const Service* service) {
  return [service](const HttpRequest&, const RequestContext& ctx) {
    return service->WorkspaceLoaded(PathWorkspace(ctx));
  };
}

// A RouteHandler that calls `method` of `handlers`, an API's handler set shared by its routes: so
// that a registration reads as a table, one route a line, each naming its handler.
template <typename Handlers>
RouteHandler BindHandler(std::shared_ptr<const Handlers> handlers,
                         Result<HttpResponse> (Handlers::*method)(const HttpRequest&,
                                                                  RequestContext&) const) {
  return [handlers = std::move(handlers), method](const HttpRequest& req, RequestContext& ctx) {
    return ((*handlers).*method)(req, ctx);
  };
}

// A handler in three steps, for routes whose Route::ready probe needs what the body names (the
// scope a search reads, whether an add waits for its extraction): `parse` the request; on an I/O
// thread, ask `ready` (may be null: always) about what it parsed, and answer
// HttpResponse::RunOnWorker() when false (the transport runs the handler again, parse included,
// on a worker); then `run`. The probe lives in the route's declaration, not in its handler.
template <typename Parsed>
struct ParsedHandlerSteps {
  std::function<Result<Parsed>(const HttpRequest&, RequestContext&)> parse;
  std::function<bool(const Parsed&)> ready;
  std::function<Result<HttpResponse>(Parsed&&, const HttpRequest&, RequestContext&)> run;
};

template <typename Parsed>
RouteHandler ParsedHandler(ParsedHandlerSteps<Parsed> steps) {
  return [steps = std::move(steps)](const HttpRequest& req,
                                    RequestContext& ctx) -> Result<HttpResponse> {
    auto parsed = steps.parse(req, ctx);
    if (!parsed.ok()) return parsed.status();
    if (req.on_io_thread && steps.ready && !steps.ready(*parsed)) {
      return HttpResponse::RunOnWorker();
    }
    return steps.run(std::move(*parsed), req, ctx);
  };
}

class Router {
 public:
  void Add(Route route);

  struct Match {
    const Route* route = nullptr;  // null: no match
    bool method_mismatch = false;  // path matched some route under another method
    std::unordered_map<std::string, std::string> params;
    // A parameter that cannot be an id: a malformed escape ('%' not followed by two hex digits),
    // or a value that decodes to a NUL character or to bytes that are not UTF-8. Empty: none.
    std::string malformed_param;
  };
  // `path` is the request's path as sent (still percent-encoded, no query): it is split at its
  // '/' first and each segment decoded after, so an id holding an encoded '/' ("team%2Falice")
  // stays one parameter. Literal segments are compared decoded.
  Match Find(std::string_view method, std::string_view path) const;
  // Find's route without its parameters (null: none under this method).
  const Route* FindRoute(std::string_view method, std::string_view path) const;

  const std::vector<Route>& routes() const { return routes_; }

 private:
  struct Compiled {
    std::vector<std::string> segments;  // "{name}" marks a parameter
  };
  static std::vector<std::string_view> Split(std::string_view path);
  // The path's segments, each percent-decoded. Only segments holding an escape are copied:
  // `decoded` keeps their text, and the views point into it or into `path`.
  static std::vector<std::string_view> DecodedSegments(std::string_view path,
                                                       std::vector<std::string>& decoded);
  // The route that names the path (index into routes_), or null; *method_mismatch as in Match.
  const Route* Resolve(std::string_view method, const std::vector<std::string_view>& segs,
                       bool* method_mismatch, size_t* index) const;
  std::vector<Route> routes_;
  std::vector<Compiled> compiled_;
};

}  // namespace engram
