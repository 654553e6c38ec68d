// App: the HTTP entry point of the API. For every request it assigns a request id, matches the
// route table, checks the service id and the API key, runs the handler, renders any error in the
// envelope, records metrics, and writes one access-log line (ids, sizes, timings only; never
// bodies, queries or memory content).
// Thread-safety: Handle and RenderTransportError are safe to call concurrently.
#pragma once

#include <memory>

#include "api/auth.h"
#include "api/metrics.h"
#include "api/router.h"
#include "server/http_types.h"

namespace engram {

class App {
 public:
  App(Router router, const ApiKeyAuth* auth, Metrics* metrics);

  HttpResponse Handle(const HttpRequest& request);
  HttpResponse RenderTransportError(StatusCode code, const std::string& message);
  // Whether the request goes to a route marked compute_bound (unknown paths: false).
  bool IsComputeBound(const HttpRequest& request) const;
  // Whether the request goes to a route marked runs_inline (unknown paths: false) with a body of
  // at most kMaxInlineBodyBytes.
  static constexpr size_t kMaxInlineBodyBytes = 256 * 1024;
  bool RunsInline(const HttpRequest& request) const;

 private:
  // Adds the request id, counts the request and logs its figures (never its content).
  HttpResponse Finish(HttpResponse response, const RequestContext& ctx,
                      const std::string& route_name, const std::string& method, size_t in_bytes);
  Router router_;
  const ApiKeyAuth* auth_;
  Metrics* metrics_;
};

}  // namespace engram
