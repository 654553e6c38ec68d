#include "api/envelope.h"

#include <strings.h>

#include <algorithm>
#include <cmath>
#include <nlohmann/json.hpp>

namespace engram {

namespace {
double RoundMs(double ms) { return std::round(ms * 1000.0) / 1000.0; }
}  // namespace

void AddRetryAfter(HttpResponse& response, int seconds) {
  if (response.status != 429 && response.status != 503) return;
  for (const auto& [name, value] : response.headers) {
    if (name.size() == 11 && strncasecmp(name.c_str(), "Retry-After", 11) == 0) return;
  }
  response.headers.emplace_back("Retry-After", std::to_string(std::max(1, seconds)));
}

nlohmann::json ListPageBody(nlohmann::json items, size_t total, size_t page_number,
                            size_t page_size, std::string_view items_key) {
  return nlohmann::json{{std::string(items_key), std::move(items)},
                        {"total", total},
                        {"page_number", page_number},
                        {"page_size", page_size}};
}

HttpResponse JsonResponse(int http_status, const nlohmann::json& body) {
  HttpResponse r;
  r.status = http_status;
  r.body = DumpJson(body);
  AddRetryAfter(r);
  return r;
}

HttpResponse ErrorResponse(const Status& status, const std::string& request_id, double latency_ms) {
  int http = HttpStatusOf(status.code());
  nlohmann::json body = {{"request_id", request_id},
                         {"latency", RoundMs(latency_ms)},
                         {"code", ApiCodeOf(status.code())},
                         {"http_code", http},
                         {"message", status.message()}};
  return JsonResponse(http, body);
}

HttpResponse V3Response(const nlohmann::json& result, const std::string& request_id,
                        double latency_ms, int http_status) {
  nlohmann::json body = {{"request_id", request_id},
                         {"latency", RoundMs(latency_ms)},
                         {"status", "OK"},
                         {"result", result}};
  return JsonResponse(http_status, body);
}

HttpResponse DeferredResponse(const RequestContext& ctx, std::function<void(DeferredFinish)> start,
                              ErrorRenderer render_error) {
  HttpResponse r;
  r.deferred = [start = std::move(start), request_id = ctx.request_id, start_ns = ctx.start_ns,
                render = std::move(render_error)](HttpReply reply) {
    start([reply = std::move(reply), request_id, start_ns, render](Result<HttpResponse> answer) {
      if (answer.ok()) return reply(std::move(*answer));
      RequestContext elapsed;
      elapsed.start_ns = start_ns;
      HttpResponse error = render ? render(answer.status(), request_id, elapsed.ElapsedMs())
                                  : ErrorResponse(answer.status(), request_id, elapsed.ElapsedMs());
      AddRetryAfter(error);
      reply(std::move(error));
    });
  };
  return r;
}

}  // namespace engram
