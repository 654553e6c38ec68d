#include "api/app.h"

#include <spdlog/spdlog.h>

#include <chrono>

#include "api/envelope.h"
#include "common/ascii.h"
#include "common/ids.h"
#include "server/request_target.h"

namespace engram {

namespace {

constexpr const char* kServiceId = "agentic-memory";

int64_t SteadyNowNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

// The path routing sees: as sent, still percent-encoded (Router::Find decodes each segment after
// splitting), or the decoded path for a request built without its target.
std::string_view RoutingPath(const HttpRequest& request) {
  return request.raw_target.empty() ? std::string_view(request.path) : RawPath(request.raw_target);
}

// A path or method for an error message: at most 200 bytes, control bytes (NUL included) shown
// as '?', so a message never carries them back.
std::string Printable(std::string_view s) {
  std::string out(s.substr(0, 200));
  for (char& c : out) {
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) c = '?';
  }
  return out;
}

}  // namespace

App::App(Router router, const ApiKeyAuth* auth, Metrics* metrics, const RequestGuard* guard)
    : router_(std::move(router)), auth_(auth), metrics_(metrics), guard_(guard) {}

// HEAD is answered as GET without the body (the transport drops it).
std::string_view App::RouteMethod(const HttpRequest& request) {
  return request.method == "HEAD" ? std::string_view("GET") : std::string_view(request.method);
}

bool App::IsComputeBound(const HttpRequest& request) const {
  const Route* route = router_.FindRoute(RouteMethod(request), RoutingPath(request));
  return route != nullptr && route->compute_bound;
}

bool App::RunsInline(const HttpRequest& request) const {
  // A large body takes long to parse (a few MB of JSON: tens of milliseconds), too long to hold
  // an I/O thread: it goes to the worker pool, and its answer is deferred all the same.
  if (request.body.size() > kMaxInlineBodyBytes) return false;
  const Route* route = router_.FindRoute(RouteMethod(request), RoutingPath(request));
  return route != nullptr && route->runs_inline;
}

Status App::Admit(const HttpRequest& request, const Router::Match& match) const {
  // A browser page that may not call the server learns nothing, not even which routes exist.
  if (guard_ != nullptr) ENGRAM_RETURN_IF_ERROR(guard_->Check(request));
  if (!match.route) {
    if (match.method_mismatch) {
      return Status(
          StatusCode::kMethodNotAllowed,
          "method " + Printable(request.method) + " is not allowed on " + Printable(request.path));
    }
    return Status::NotFound("no route for " + Printable(request.method) + " " +
                            Printable(request.path));
  }
  std::string workspace = match.route->fixed_workspace;
  bool chosen = false;  // named by the client (path or header): must be a well-formed name
  if (!match.route->workspace_header.empty()) {
    if (const std::string* h = request.Header(match.route->workspace_header)) {
      workspace = *h;
      chosen = true;
    }
  }
  // The Agentic Memory paths name it {workspace_name} (as the vendor's reference does), the MCP
  // mount {workspace}.
  auto named = match.params.find("workspace_name");
  if (named == match.params.end()) named = match.params.find("workspace");
  if (named != match.params.end()) {
    workspace = named->second;
    chosen = true;
  }
  // Authentication first: a caller without a valid key learns nothing about the request
  // beyond "401", not even that its workspace name is malformed.
  if (match.route->auth == AuthMode::kApiKey) {
    ENGRAM_RETURN_IF_ERROR(auth_->Check(request, workspace));
  } else if (match.route->auth == AuthMode::kAllWorkspaces) {
    ENGRAM_RETURN_IF_ERROR(auth_->CheckAllWorkspaces(request));
  } else if (match.route->auth == AuthMode::kAnyWorkspace) {
    ENGRAM_RETURN_IF_ERROR(auth_->CheckAnyWorkspace(request));
  }
  if (!match.malformed_param.empty()) {
    return Status::InvalidParameter(
        match.malformed_param +
        " in the path is malformed: percent escapes are %XX, and the decoded value is UTF-8 "
        "without NUL characters");
  }
  if (const std::string* encoding = request.Header("content-encoding")) {
    const std::string_view e = TrimAsciiSpace(*encoding);
    if (!e.empty() && !EqualsIgnoreAsciiCase(e, "identity")) {
      return Status(StatusCode::kUnsupportedMediaType,
                    "Content-Encoding " + std::string(e.substr(0, 32)) +
                        " is not supported; send the body uncompressed (identity)");
    }
  }
  if (const std::string* te = request.Header("transfer-encoding")) {
    // The transport reads chunked bodies only; a body in any other transfer coding would read as
    // empty. RFC 9112 asks for 501 on a transfer coding the server does not understand.
    const std::string_view coding = TrimAsciiSpace(*te);
    if (!EqualsIgnoreAsciiCase(coding, "chunked") && !EqualsIgnoreAsciiCase(coding, "identity")) {
      return Status(StatusCode::kNotImplemented,
                    "Transfer-Encoding " + Printable(coding.substr(0, 32)) +
                        " is not supported; send the body chunked or with a Content-Length");
    }
  }
  if (chosen && !IsValidWorkspaceName(workspace)) {
    return Status::InvalidParameter(
        "workspace_name must be 1-64 characters of letters, digits, '-', '_' or '.', other than "
        "\".\" and \"..\"");
  }
  if (auto it = match.params.find("service_id");
      it != match.params.end() && it->second != kServiceId) {
    return Status(StatusCode::kServiceIdNotExist,
                  "service_id " + it->second + " does not exist; use " + kServiceId);
  }
  return Status::Ok();
}

std::optional<HttpResponse> App::Preflight(const HttpRequest& request) {
  if (guard_ == nullptr) return std::nullopt;
  std::optional<HttpResponse> answer = guard_->Preflight(request);
  if (!answer) return std::nullopt;
  RequestContext ctx;
  ctx.start_ns = SteadyNowNs();
  ctx.request_id = NewUuid();
  return Finish(std::move(*answer), ctx, "cors_preflight", request.method, 0);
}

std::optional<HttpResponse> App::CheckBeforeBody(const HttpRequest& head) {
  if (auto preflight = Preflight(head)) return preflight;
  const auto match = router_.Find(RouteMethod(head), RoutingPath(head));
  Status admitted = Admit(head, match);
  if (admitted.ok()) return std::nullopt;
  RequestContext ctx;
  ctx.start_ns = SteadyNowNs();
  ctx.request_id = NewUuid();
  HttpResponse response = RenderError(match.route, admitted, ctx);
  return Finish(std::move(response), ctx, match.route ? match.route->name : "unmatched",
                head.method, 0);
}

HttpResponse App::Handle(const HttpRequest& request) {
  if (auto preflight = Preflight(request)) return std::move(*preflight);
  RequestContext ctx;
  ctx.start_ns = SteadyNowNs();
  ctx.request_id = NewUuid();

  auto match = router_.Find(RouteMethod(request), RoutingPath(request));
  std::string route_name = match.route ? match.route->name : "unmatched";
  Result<HttpResponse> result = [&]() -> Result<HttpResponse> {
    ENGRAM_RETURN_IF_ERROR(Admit(request, match));
    ctx.params = std::move(match.params);
    if (request.on_io_thread && match.route->ready && !match.route->ready(request, ctx)) {
      return HttpResponse::RunOnWorker();
    }
    return match.route->handler(request, ctx);
  }();
  if (result.ok() && result->run_on_worker) {
    // Not an answer: the transport runs the request again on a worker (not counted twice).
    return std::move(*result);
  }

  HttpResponse response =
      result.ok() ? std::move(*result) : RenderError(match.route, result.status(), ctx);
  if (guard_ != nullptr) guard_->AddCorsHeaders(request, response);
  if (response.deferred) {
    // The answer comes later: it gets its request id and is counted then.
    response.deferred = [this, start = std::move(response.deferred), ctx = std::move(ctx),
                         route_name = std::move(route_name), method = request.method,
                         in_bytes = request.body.size()](HttpReply reply) {
      start(
          [this, reply = std::move(reply), ctx, route_name, method, in_bytes](HttpResponse answer) {
            reply(Finish(std::move(answer), ctx, route_name, method, in_bytes));
          });
    };
    return response;
  }
  return Finish(std::move(response), ctx, route_name, request.method, request.body.size());
}

HttpResponse App::RenderError(const Route* route, const Status& status, const RequestContext& ctx) {
  if (route != nullptr && route->render_error) {
    HttpResponse r = route->render_error(status, ctx.request_id, ctx.ElapsedMs());
    AddRetryAfter(r);
    return r;
  }
  return ErrorResponse(status, ctx.request_id, ctx.ElapsedMs());
}

HttpResponse App::Finish(HttpResponse response, const RequestContext& ctx,
                         const std::string& route_name, const std::string& method,
                         size_t in_bytes) {
  response.headers.emplace_back("X-Request-Id", ctx.request_id);
  double ms = ctx.ElapsedMs();
  metrics_->ObserveRequest(route_name, method, response.status, ms / 1000.0);
  spdlog::debug("request id={} route={} method={} status={} in_bytes={} out_bytes={} ms={:.3f}",
                ctx.request_id, route_name, method, response.status, in_bytes, response.body.size(),
                ms);
  return response;
}

HttpResponse App::RenderTransportError(StatusCode code, const std::string& message) {
  std::string id = NewUuid();
  HttpResponse r = ErrorResponse(Status(code, message), id, 0);
  r.headers.emplace_back("X-Request-Id", id);
  metrics_->ObserveRequest("transport", "", r.status, 0);
  spdlog::debug("request id={} route=transport status={}", id, r.status);
  return r;
}

}  // namespace engram
