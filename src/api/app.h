// App: the HTTP entry point of the API. For every request it assigns a request id, matches the
// route table, checks the service id and the API key, runs the handler, renders any error in the
// envelope, records metrics, and writes one access-log line (ids, sizes, timings only; never
// bodies, queries or memory content).
// Thread-safety: Handle and RenderTransportError are safe to call concurrently.
#pragma once

#include <memory>
#include <optional>
#include <string_view>

#include "api/auth.h"
#include "api/metrics.h"
#include "api/request_guard.h"
#include "api/router.h"
#include "server/http_types.h"

namespace engram {

class App {
 public:
  // `guard` (may be null: no browser checks) is checked before anything else, also for unknown
  // routes; it must outlive the App, as must `auth` and `metrics`.
  App(Router router, const ApiKeyAuth* auth, Metrics* metrics, const RequestGuard* guard = nullptr);

  HttpResponse Handle(const HttpRequest& request);
  // The answer to a request from its head alone (no body read yet), or nullopt to read the body
  // and Handle it: unknown routes, missing or invalid keys, unsupported encodings and malformed
  // workspace names are refused here, so a client that would be refused anyway cannot make the
  // server receive and hold its body (HttpServerOptions::check_head). Cheap: no I/O.
  std::optional<HttpResponse> CheckBeforeBody(const HttpRequest& head);
  HttpResponse RenderTransportError(StatusCode code, const std::string& message);
  // Whether the request goes to a route marked compute_bound (unknown paths: false).
  bool IsComputeBound(const HttpRequest& request) const;
  // Whether the request goes to a route marked runs_inline (unknown paths: false) with a body of
  // at most kMaxInlineBodyBytes.
  static constexpr size_t kMaxInlineBodyBytes = 256 * 1024;
  bool RunsInline(const HttpRequest& request) const;

 private:
  // The route method a request is matched under: its own, except HEAD, served as GET.
  static std::string_view RouteMethod(const HttpRequest& request);
  // What every request passes before its handler runs: the request guard (origin, host, a
  // browser's body type), a route, a valid key, a body encoding the server reads, a well-formed
  // workspace name and service id.
  Status Admit(const HttpRequest& request, const Router::Match& match) const;
  // A refusal in the route's error envelope (the Agentic Memory one without a route).
  static HttpResponse RenderError(const Route* route, const Status& status,
                                  const RequestContext& ctx);
  // Adds the request id, counts the request and logs its figures (never its content).
  HttpResponse Finish(HttpResponse response, const RequestContext& ctx,
                      const std::string& route_name, const std::string& method, size_t in_bytes);
  // The preflight answer or nullopt (see RequestGuard::Preflight).
  std::optional<HttpResponse> Preflight(const HttpRequest& request);
  Router router_;
  const ApiKeyAuth* auth_;
  Metrics* metrics_;
  const RequestGuard* guard_;
};

}  // namespace engram
