// Test-only: an in-process OpenAI-compatible endpoint (a real HTTP server on a free port) for the
// tests of the clients that call one (embeddings, chat completions). Each test says how it
// answers; every request's body, authorization header and path are recorded.
//
// Thread-safety: the recorded requests are read under the endpoint's lock; `behaviour` runs on the
// server's worker threads and must be safe to call concurrently.
#pragma once

#include <gtest/gtest.h>

#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <mutex>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

#include "server/http_server.h"

namespace engram::testing {

using json = nlohmann::json;

// An HTTP response with `body` as its JSON text.
inline HttpResponse JsonResponse(int status, const json& body) {
  HttpResponse r;
  r.status = status;
  r.body = body.dump();
  return r;
}

// A real HTTP server in the test process standing in for an OpenAI-compatible endpoint. Records
// every request; `behaviour` decides the answer (request_number counts from 1).
class FakeOpenAiEndpoint {
 public:
  using Behaviour = std::function<HttpResponse(const json& body, int request_number)>;

  explicit FakeOpenAiEndpoint(Behaviour behaviour)
      : behaviour_(std::move(behaviour)),
        server_(
            Options(), [this](const HttpRequest& r) { return Handle(r); },
            [](StatusCode code, const std::string& message) {
              return JsonResponse(HttpStatusOf(code), {{"error", {{"message", message}}}});
            }) {
    Status st = server_.Start();
    EXPECT_TRUE(st.ok()) << st.ToString();
  }

  ~FakeOpenAiEndpoint() {
    Release();
    server_.Stop(std::chrono::milliseconds(1000));
  }

  uint16_t port() const { return server_.port(); }
  std::string base_url() const { return "http://127.0.0.1:" + std::to_string(port()) + "/v1"; }

  int requests() const {
    std::lock_guard<std::mutex> lock(mu_);
    return static_cast<int>(bodies_.size());
  }
  json body(size_t i) const {
    std::lock_guard<std::mutex> lock(mu_);
    return bodies_.at(i);
  }
  std::string authorization(size_t i) const {
    std::lock_guard<std::mutex> lock(mu_);
    return authorizations_.at(i);
  }
  std::string path(size_t i) const {
    std::lock_guard<std::mutex> lock(mu_);
    return paths_.at(i);
  }

  // For handlers that must outlast the client's timeout: blocks until Release() (at the latest at
  // teardown) so the test never waits for a fixed long sleep.
  void WaitForRelease(std::chrono::milliseconds max) {
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait_for(lock, max, [this] { return released_; });
  }
  void Release() {
    std::lock_guard<std::mutex> lock(mu_);
    released_ = true;
    cv_.notify_all();
  }

 private:
  static HttpServerOptions Options() {
    HttpServerOptions o;
    o.port = 0;
    o.io_threads = 1;
    o.worker_threads = 8;
    return o;
  }

  HttpResponse Handle(const HttpRequest& r) {
    json body = json::parse(r.body, nullptr, false);
    int n;
    {
      std::lock_guard<std::mutex> lock(mu_);
      bodies_.push_back(body);
      const std::string* auth = r.Header("authorization");
      authorizations_.push_back(auth ? *auth : "");
      paths_.push_back(r.method + " " + r.path);
      n = static_cast<int>(bodies_.size());
    }
    if (body.is_discarded()) return JsonResponse(400, {{"error", {{"message", "bad json"}}}});
    return behaviour_(body, n);
  }

  Behaviour behaviour_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  bool released_ = false;
  std::vector<json> bodies_;
  std::vector<std::string> authorizations_;
  std::vector<std::string> paths_;
  HttpServer server_;  // last: stopped (by the destructor) before the members its handler uses
};

}  // namespace engram::testing
