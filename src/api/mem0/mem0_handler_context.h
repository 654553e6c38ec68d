// What every mem0-compatible route handler shares: its dependencies and options, and the steps
// each request starts with (query string, JSON body, workspace). Internal to src/api/mem0.
// Thread-safety: immutable after construction; shared by the handlers of concurrent requests.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "api/mem0/mem0_api.h"
#include "api/router.h"

namespace engram {

struct Mem0Request {
  std::map<std::string, std::string> query;
  std::optional<nlohmann::json> body;  // set for requests with a body
  std::string workspace;
};

struct Mem0Paging {
  size_t page = 1;  // from 1
  size_t page_size = 0;
};

class Mem0HandlerContext {
 public:
  Mem0HandlerContext(Mem0ApiDeps deps, Mem0ApiOptions options)
      : deps_(deps), options_(std::move(options)) {}

  // Parses the query string (and the body, when `with_body`: a JSON object; an empty body is
  // {}) and resolves the workspace.
  Result<Mem0Request> Begin(const HttpRequest& request, bool with_body) const;

  // The query's page (from 1) and page_size (1 to limits().max_page_size; `default_size` when
  // absent).
  Result<Mem0Paging> Paging(const Mem0Request& request, size_t default_size) const;

  // A route of this API: the given handler, authenticated by key (any workspace; the handler
  // picks one), errors in mem0's envelope.
  Route MakeRoute(std::string method, std::string pattern, std::string name,
                  RouteHandler handler) const;

  MemoryService& memories() const { return *deps_.memories; }
  const MemoryExtractor* extractor() const { return deps_.extractor; }
  const Mem0ApiOptions& options() const { return options_; }
  const MemoryApiLimits& limits() const { return options_.limits; }

 private:
  Mem0ApiDeps deps_;
  Mem0ApiOptions options_;
};

using Mem0Context = std::shared_ptr<const Mem0HandlerContext>;

// A handler of this API, called once the request has begun (Mem0HandlerContext::Begin): `req`
// holds its query string, its JSON body when the route reads one, and its workspace.
using Mem0Handler = std::function<Result<HttpResponse>(const HttpRequest& http,
                                                       const Mem0Request& req, RequestContext& rc)>;

// Whether a route reads a JSON body (an empty one reads as {}).
enum class Mem0Body { kNone, kJson };

// One route of a table of this API's routes.
struct Mem0RouteSpec {
  const char* method;
  const char* pattern;
  const char* name;
  Mem0Body body;
  Mem0Handler handler;
  // Route::doc: the OpenAPI operation, when routes share `name` but not a description.
  const char* doc = "";
};

// The Route of `spec` (see Mem0HandlerContext::MakeRoute): the request begun, then its handler.
Route MakeMem0Route(const Mem0Context& ctx, Mem0RouteSpec spec);

// A Mem0Handler that calls `method` of `handlers`, the handler set of a table's routes.
template <typename Handlers>
Mem0Handler BindMem0(std::shared_ptr<const Handlers> handlers,
                     Result<HttpResponse> (Handlers::*method)(const HttpRequest&,
                                                              const Mem0Request&, RequestContext&)
                         const) {
  return [handlers = std::move(handlers), method](const HttpRequest& http, const Mem0Request& req,
                                                  RequestContext& rc) {
    return ((*handlers).*method)(http, req, rc);
  };
}

// The route groups, each in its own file.
void RegisterMem0MemoryRoutes(Router& router, const Mem0Context& ctx);
void RegisterMem0ServiceRoutes(Router& router, const Mem0Context& ctx);

}  // namespace engram
