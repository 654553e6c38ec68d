// Plain request/response values exchanged between the HTTP transport and the API layer.
//
// No Boost here: the router and the handlers include this header only, so they compile fast and can
// be tested without a socket. Thread-safety: value types.
#pragma once

#include <functional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "common/status.h"

namespace engram {

struct HttpRequest {
  std::string method;      // as received; "GET", "POST", ... (standard clients send upper-case)
  std::string path;        // percent-decoded path without query, e.g. "/leaderboard/add"
  std::string raw_target;  // as received
  std::string query;       // raw query string after '?', may be empty
  std::vector<std::pair<std::string, std::string>> headers;  // names lower-cased, in received order
  std::string body;
  std::string remote_ip;
  bool remote_is_loopback = false;
  // Set by the transport when the handler runs on an I/O thread (a compute-bound or inline
  // request), where it must not wait long: a handler that would (a shard to load from the store,
  // an extraction to wait for) asks its service's non-blocking probe first and answers
  // HttpResponse::RunOnWorker() instead; the transport then runs it again on a worker, with this
  // false.
  bool on_io_thread = false;

  // The value of the first header named `lower_name` (lower-case), or nullptr.
  const std::string* Header(std::string_view lower_name) const {
    for (const auto& [name, value] : headers) {
      if (name == lower_name) return &value;
    }
    return nullptr;
  }
};

struct HttpResponse;
// Delivers a deferred answer (see HttpResponse::deferred). Callable from any thread; only its first
// call counts.
using HttpReply = std::function<void(HttpResponse)>;

struct HttpResponse {
  int status = 200;
  std::string content_type = "application/json";
  std::string body;
  // Extra headers (e.g. X-Request-Id). The transport owns framing: Content-Length,
  // Transfer-Encoding and Connection given here are ignored, except that "Connection: close"
  // makes the server close the connection after this response.
  std::vector<std::pair<std::string, std::string>> headers;
  // Set by a handler run on an I/O thread (HttpRequest::on_io_thread) that would wait long:
  // nothing is sent; the transport runs the request again on a worker.
  bool run_on_worker = false;
  // Set by a handler that answers later, when work it handed to another thread is done (an add
  // answered once its event is durable): nothing is sent yet; the transport calls this once, on
  // the handler's thread, with the HttpReply that sends the answer. It must see that the reply is
  // called exactly once (the connection waits for it, and so does a graceful stop).
  std::function<void(HttpReply)> deferred;

  // The answer of a handler on an I/O thread that would wait long (see run_on_worker).
  static HttpResponse RunOnWorker() {
    HttpResponse r;
    r.run_on_worker = true;
    return r;
  }
};

// Runs on a worker thread, so it may block, or, for requests HttpServerOptions::is_compute_bound
// and runs_inline select, on an I/O thread (HttpRequest::on_io_thread). May throw: the transport
// answers 500
// through the error renderer.
using HttpHandler = std::function<HttpResponse(const HttpRequest&)>;

// Renders transport-level errors in the API's envelope: 413 body/header too large
// (kPayloadTooLarge), 400 malformed HTTP (kInvalidParameter), 503 overloaded (kUnavailable), 500
// handler threw (kInternal). Provided by the API layer; must be thread-safe (called on I/O and
// worker threads).
using HttpErrorRenderer = std::function<HttpResponse(StatusCode code, const std::string& message)>;

}  // namespace engram
