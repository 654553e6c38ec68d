// Response rendering shared by every API family: the error envelope and V3 success envelopes, with
// JSON dumping that never throws on invalid UTF-8 (DumpJson, common/json_reader.h).
// Thread-safety: pure functions.
#pragma once

#include <functional>
#include <nlohmann/json_fwd.hpp>
#include <string>
#include <string_view>

#include "api/router.h"
#include "common/json_reader.h"  // DumpJson, for the handlers that render with these helpers
#include "common/status.h"
#include "server/http_types.h"

namespace engram {

// Every 429 and 503 tells the client when to come back: a client without the header waits its
// own default (the leaderboard platform's: 60 s). Sets `Retry-After: <seconds>` (at least 1) on a
// 429 or 503 response that has none; other statuses are left alone. The queues behind these
// answers drain within seconds, hence the default of 1.
void AddRetryAfter(HttpResponse& response, int seconds = 1);

// {"request_id", "latency", "code", "http_code", "message"} with the status's HTTP code (and
// Retry-After on 429 / 503: the transport's overload answers are rendered here too).
HttpResponse ErrorResponse(const Status& status, const std::string& request_id, double latency_ms);

// One page of a list, as every list answers it: {<items_key>: items, total, page_number,
// page_size}.
nlohmann::json ListPageBody(nlohmann::json items, size_t total, size_t page_number,
                            size_t page_size, std::string_view items_key = "results");

// A JSON body with the given HTTP status (Retry-After added on 429 / 503).
HttpResponse JsonResponse(int http_status, const nlohmann::json& body);

// {"request_id", "latency", "status": "OK", "result": result} (V3 envelope).
HttpResponse V3Response(const nlohmann::json& result, const std::string& request_id,
                        double latency_ms, int http_status = 200);

// A handler's answer that comes later (HttpResponse::deferred): `start` runs once, on the
// handler's thread, with `finish`, which it (or whoever it hands the work to) calls once, from any
// thread, with the answer or the error; an error is rendered with `render_error` (ErrorResponse
// when null).
using DeferredFinish = std::function<void(Result<HttpResponse>)>;
HttpResponse DeferredResponse(const RequestContext& ctx, std::function<void(DeferredFinish)> start,
                              ErrorRenderer render_error = nullptr);

}  // namespace engram
