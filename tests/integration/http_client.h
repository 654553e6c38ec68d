// HTTP helpers for the integration tests.
//
// HttpClient: a thin libcurl easy-interface wrapper. Each call uses its own easy handle, so one
// HttpClient may be shared by many threads. Every request has a 10 s total timeout; transport
// failures come back as status 0 with `error` set rather than as exceptions.
//
// RawSocket: a plain TCP connection to 127.0.0.1 for what a well-behaved client cannot send
// (slowloris trickles, malformed request lines).
#pragma once

#include <chrono>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

namespace engram::testing {

using Headers = std::map<std::string, std::string>;

struct HttpResponse {
  long status = 0;    // 0: transport failure, see `error`
  std::string error;  // libcurl's message on transport failure
  Headers headers;    // keys lower-cased; the last value wins for repeated headers
  std::string body;
  double seconds = 0;  // wall time of the exchange

  // The header value or "" (name case-insensitive).
  std::string Header(std::string_view name) const;
  // Parses `body`; a discarded value (is_discarded()) when it is not JSON.
  nlohmann::json Json() const;
  // One-line summary for failure messages: status, error and (truncated) body.
  std::string Describe() const;
};

class HttpClient {
 public:
  explicit HttpClient(std::string base_url);

  void set_base_url(std::string base_url) { base_url_ = std::move(base_url); }
  const std::string& base_url() const { return base_url_; }

  // POST with `body`; Content-Type defaults to application/json unless `headers` sets one.
  HttpResponse Post(std::string_view path, std::string_view body,
                    const Headers& headers = {}) const;
  HttpResponse Post(std::string_view path, const nlohmann::json& body,
                    const Headers& headers = {}) const;
  HttpResponse Get(std::string_view path, const Headers& headers = {}) const;
  HttpResponse Delete(std::string_view path, const Headers& headers = {}) const;
  // Any method, optional body ("HEAD" reads the head only).
  HttpResponse Request(std::string_view method, std::string_view path, std::string_view body,
                       const Headers& headers) const;

 private:
  std::string base_url_;
};

class RawSocket {
 public:
  RawSocket() = default;
  ~RawSocket();
  RawSocket(const RawSocket&) = delete;
  RawSocket& operator=(const RawSocket&) = delete;
  RawSocket(RawSocket&& other) noexcept;
  RawSocket& operator=(RawSocket&& other) noexcept;

  // Connects to 127.0.0.1:port. False (and errno kept) on failure.
  bool Connect(int port);
  bool connected() const { return fd_ >= 0; }
  // Sends everything; false when the peer has closed or reset the connection.
  bool Send(std::string_view bytes);
  // Reads until the peer closes, `timeout` passes, or (when stop_at_header_end) a full header
  // block plus Content-Length bytes of body arrived. Returns what was read.
  std::string Receive(std::chrono::milliseconds timeout, bool stop_at_message_end = true);
  // True when the peer has closed (EOF or reset) within `timeout`; data it sends meanwhile is
  // discarded into `*received` when given.
  bool WaitClosed(std::chrono::milliseconds timeout, std::string* received = nullptr);
  void Close();

 private:
  int fd_ = -1;
};

// Sends `request` on a fresh connection and returns the raw response bytes (up to `timeout`).
std::string RawExchange(int port, std::string_view request,
                        std::chrono::milliseconds timeout = std::chrono::seconds(5));

// The status code of a raw HTTP/1.x response ("HTTP/1.1 400 Bad Request" -> 400), 0 if none.
int RawStatus(std::string_view response);

}  // namespace engram::testing
