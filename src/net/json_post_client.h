// JsonPostClient: POSTs JSON bodies to one HTTP(S) endpoint with the transport policy every
// outbound API call of Engram shares (embeddings, chat completions):
//  - timeouts for connecting and for the whole request; no SIGALRM (multi-threaded server);
//  - retries on connection errors, timeouts, 429 and 5xx, up to max_retries, waiting
//    retry_base * 2^(n-1) jittered into [50%, 100%], or longer when the server sends a Retry-After
//    of up to 30 s;
//  - 400 / 413 / 422 → kInvalidParameter (the input is at fault); any other non-2xx (401, 403,
//    404, redirects) → kUnavailable (the endpoint is misconfigured); neither is retried;
//  - redirects are never followed (they could carry the Authorization header elsewhere); http and
//    https only; decoded responses beyond max_response_bytes abort the request (not retried);
//  - error messages name the endpoint (without credentials) and say what happened in fixed words
//    ("answered HTTP 400", "timed out after 60000 ms", libcurl's phrase for a transport error);
//    nothing the server sent and no request body goes into a Status or log: error bodies often
//    echo the request (a conversation), and these messages are stored and returned by the API.
//
// Thread-safety: Post is safe to call concurrently; requests run in parallel on a small pool of
// reused libcurl handles (keep-alive, TLS session reuse). Ownership: owns its handles.
#pragma once

#include <chrono>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "common/mutex.h"
#include "common/status.h"

namespace engram {

struct JsonPostOptions {
  std::string url;      // the full endpoint URL, http:// or https://
  std::string api_key;  // sent as "Authorization: Bearer <key>" when non-empty
  std::string label;    // what the endpoint is, for messages: "embedding endpoint"
  std::chrono::milliseconds connect_timeout{2000};
  std::chrono::milliseconds request_timeout{30000};  // whole request, connect included
  int max_retries = 3;                               // >= 0
  std::chrono::milliseconds retry_base{200};
  size_t max_response_bytes = 64 << 20;  // >= 1
};

class JsonPostClient {
 public:
  // Checks the options (kInvalidParameter, message prefixed with `owner`, e.g. "chat client: "),
  // initialises libcurl once per process.
  static Result<std::unique_ptr<JsonPostClient>> Create(JsonPostOptions options,
                                                        std::string_view owner);
  ~JsonPostClient();
  JsonPostClient(const JsonPostClient&) = delete;
  JsonPostClient& operator=(const JsonPostClient&) = delete;

  // The body of the first 2xx answer, or the last error (see the header comment). `body` must be
  // JSON text.
  Result<std::string> Post(const std::string& body) const;

  // "<label> <url without credentials>", the prefix of every message; callers use it for errors
  // they find in a 2xx body.
  const std::string& where() const { return where_; }

 private:
  class CurlHandle;
  explicit JsonPostClient(JsonPostOptions options);
  std::unique_ptr<CurlHandle> AcquireHandle() const EXCLUDES(pool_mu_);
  void ReleaseHandle(std::unique_ptr<CurlHandle> handle) const EXCLUDES(pool_mu_);

  const JsonPostOptions options_;
  const std::string where_;
  mutable Mutex pool_mu_;
  mutable std::vector<std::unique_ptr<CurlHandle>> pool_ GUARDED_BY(pool_mu_);
};

// Validates an API base URL option (http(s), a host, no spaces or control characters); the message
// is prefixed with `owner`.
Status CheckBaseUrl(const std::string& url, std::string_view owner);

// `s` without trailing '/'.
std::string TrimTrailingSlashes(std::string s);

// True when `s` holds ASCII control characters (CR/LF in a header value would inject headers).
bool HasControlChars(const std::string& s);

}  // namespace engram
