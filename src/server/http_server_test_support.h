// Test-only helpers shared by the HttpServer tests (http_server_test.cc,
// http_server_limits_test.cc, http_server_scheduling_test.cc): a stand-in for the API layer's error
// renderer, an echoing handler, curl and raw-socket clients, and the fixture that initialises curl
// once per suite.
#pragma once

#include <arpa/inet.h>
#include <curl/curl.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cctype>
#include <chrono>
#include <cstdint>
#include <string>
#include <string_view>

#include "server/http_server.h"

namespace engram::testing {

using Clock = std::chrono::steady_clock;

inline double MsSince(Clock::time_point t) {
  return std::chrono::duration<double, std::milli>(Clock::now() - t).count();
}

// The API layer's renderer, reduced to what the tests check.
inline HttpResponse RenderError(StatusCode code, const std::string& message) {
  HttpResponse r;
  r.status = HttpStatusOf(code);
  r.body = std::string("{\"code\":\"") + ApiCodeOf(code) + "\",\"message\":\"" + message + "\"}";
  r.headers.emplace_back("X-Request-Id", "err-1");
  return r;
}

// Echoes what the transport parsed.
inline HttpResponse Echo(const HttpRequest& req) {
  HttpResponse r;
  r.body = req.method + "|" + req.path + "|" + req.query + "|" + req.body;
  if (const std::string* h = req.Header("x-test")) r.body += "|x-test=" + *h;
  if (req.remote_is_loopback) r.body += "|loopback";
  r.headers.emplace_back("X-Request-Id", "req-1");
  return r;
}

inline HttpServerOptions TestOptions() {
  HttpServerOptions o;
  o.port = 0;
  o.worker_threads = 4;
  return o;
}

struct CurlResult {
  long status = 0;
  std::string body;
  std::string headers;
  long connects = -1;
  CURLcode code = CURLE_OK;
};

inline size_t Collect(char* data, size_t size, size_t n, void* out) {
  static_cast<std::string*>(out)->append(data, size * n);
  return size * n;
}

// One request on `curl` (reused handles keep their connection alive).
inline CurlResult Fetch(CURL* curl, const std::string& url, const std::string* post_body = nullptr,
                        curl_slist* headers = nullptr) {
  CurlResult r;
  curl_easy_setopt(curl, CURLOPT_URL, url.c_str());
  curl_easy_setopt(curl, CURLOPT_WRITEFUNCTION, Collect);
  curl_easy_setopt(curl, CURLOPT_WRITEDATA, &r.body);
  curl_easy_setopt(curl, CURLOPT_HEADERFUNCTION, Collect);
  curl_easy_setopt(curl, CURLOPT_HEADERDATA, &r.headers);
  curl_easy_setopt(curl, CURLOPT_TIMEOUT_MS, 10000L);
  curl_easy_setopt(curl, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(curl, CURLOPT_HTTPHEADER, headers);
  if (post_body != nullptr) {
    curl_easy_setopt(curl, CURLOPT_POSTFIELDS, post_body->data());
    curl_easy_setopt(curl, CURLOPT_POSTFIELDSIZE_LARGE, static_cast<curl_off_t>(post_body->size()));
  } else {
    curl_easy_setopt(curl, CURLOPT_HTTPGET, 1L);
  }
  r.code = curl_easy_perform(curl);
  curl_easy_getinfo(curl, CURLINFO_RESPONSE_CODE, &r.status);
  curl_easy_getinfo(curl, CURLINFO_NUM_CONNECTS, &r.connects);
  return r;
}

inline CurlResult FetchOnce(const std::string& url, const std::string* post_body = nullptr,
                            curl_slist* headers = nullptr) {
  CURL* curl = curl_easy_init();
  CurlResult r = Fetch(curl, url, post_body, headers);
  curl_easy_cleanup(curl);
  return r;
}

inline std::string Url(const HttpServer& s, const std::string& path) {
  return "http://127.0.0.1:" + std::to_string(s.port()) + path;
}

// --- raw sockets ---------------------------------------------------------------------------

inline int Connect(uint16_t port) {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(port);
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) {
    ::close(fd);
    return -1;
  }
  return fd;
}

inline bool SendAll(int fd, std::string_view data) {
  while (!data.empty()) {
    const ssize_t n = ::send(fd, data.data(), data.size(), MSG_NOSIGNAL);
    if (n <= 0) return false;
    data.remove_prefix(static_cast<size_t>(n));
  }
  return true;
}

struct RawResponse {
  int status = 0;
  std::string head;  // status line + headers
  std::string body;
  bool ok = false;
};

// Reads one response (Content-Length framed); `pending` carries bytes read past it.
inline RawResponse ReadResponse(int fd, std::string& pending, int timeout_ms = 5000) {
  RawResponse r;
  const auto deadline = Clock::now() + std::chrono::milliseconds(timeout_ms);
  auto fill = [&]() -> bool {
    const int left = static_cast<int>(
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count());
    if (left <= 0) return false;
    pollfd p{fd, POLLIN, 0};
    if (::poll(&p, 1, left) <= 0) return false;
    char buf[8192];
    const ssize_t n = ::recv(fd, buf, sizeof(buf), 0);
    if (n <= 0) return false;
    pending.append(buf, static_cast<size_t>(n));
    return true;
  };
  size_t end;
  while ((end = pending.find("\r\n\r\n")) == std::string::npos) {
    if (!fill()) return r;
  }
  r.head = pending.substr(0, end + 2);
  pending.erase(0, end + 4);
  r.status = std::stoi(r.head.substr(9, 3));
  size_t length = 0;
  std::string lower = r.head;
  for (char& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  const size_t cl = lower.find("content-length:");
  if (cl != std::string::npos) length = std::stoul(lower.substr(cl + 15));
  while (pending.size() < length) {
    if (!fill()) return r;
  }
  r.body = pending.substr(0, length);
  pending.erase(0, length);
  r.ok = true;
  return r;
}

// True when the peer closes the connection within `timeout_ms` (unread data is discarded).
inline bool WaitClosed(int fd, int timeout_ms) {
  const auto deadline = Clock::now() + std::chrono::milliseconds(timeout_ms);
  for (;;) {
    const int left = static_cast<int>(
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count());
    if (left <= 0) return false;
    pollfd p{fd, POLLIN, 0};
    if (::poll(&p, 1, left) <= 0) return false;
    char buf[4096];
    const ssize_t n = ::recv(fd, buf, sizeof(buf), 0);
    if (n <= 0) return true;
  }
}

inline bool HeadHas(const RawResponse& r, const std::string& needle) {
  std::string lower = r.head;
  for (char& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return lower.find(needle) != std::string::npos;
}

class HttpServerTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { curl_global_init(CURL_GLOBAL_DEFAULT); }
};

}  // namespace engram::testing
