#include "net/json_post_client.h"

#include <curl/curl.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdlib>
#include <nlohmann/json.hpp>
#include <optional>
#include <random>
#include <string_view>
#include <thread>
#include <utility>

#include "common/json_reader.h"
#include "common/utf8.h"

namespace engram {
namespace {

using json = nlohmann::json;
using std::chrono::milliseconds;

// Reused handles kept for keep-alive; more concurrent callers than this just make extra handles.
constexpr size_t kMaxPooledHandles = 8;
// A server asking for a longer pause than this is treated as if it asked for this much: a request
// should fail and be reported rather than hang for minutes.
constexpr milliseconds kMaxRetryAfter{30000};
constexpr milliseconds kMaxBackoff{30000};

// curl_global_init is not safe to race with itself; a function-local static runs it exactly once.
CURLcode EnsureCurlGlobalInit() {
  static const CURLcode kInit = curl_global_init(CURL_GLOBAL_DEFAULT);
  return kInit;
}

bool StartsWithNoCase(const std::string& s, std::string_view prefix) {
  if (s.size() < prefix.size()) return false;
  for (size_t i = 0; i < prefix.size(); ++i) {
    if (std::tolower(static_cast<unsigned char>(s[i])) != prefix[i]) return false;
  }
  return true;
}

// The URL for error messages, without any "user:password@" part.
std::string DisplayUrl(const std::string& url) {
  size_t scheme_end = url.find("://");
  if (scheme_end == std::string::npos) return url;
  size_t host_start = scheme_end + 3;
  size_t path_start = url.find('/', host_start);
  size_t at = url.rfind('@', path_start == std::string::npos ? url.size() : path_start);
  if (at == std::string::npos || at < host_start) return url;
  return url.substr(0, host_start) + url.substr(at + 1);
}

// What one attempt left behind; filled by the libcurl callbacks.
struct Transfer {
  std::string body;
  size_t limit = 0;
  bool too_large = false;
  std::optional<milliseconds> retry_after;
};

size_t OnBody(char* data, size_t size, size_t n, void* user) {
  auto* t = static_cast<Transfer*>(user);
  size_t len = size * n;
  if (t->body.size() + len > t->limit) {
    t->too_large = true;
    return 0;  // anything but len aborts the transfer with CURLE_WRITE_ERROR
  }
  t->body.append(data, len);
  return len;
}

// Picks up "Retry-After: <seconds>" (the HTTP-date form is rare for APIs and ignored).
size_t OnHeader(char* data, size_t size, size_t n, void* user) {
  auto* t = static_cast<Transfer*>(user);
  size_t len = size * n;
  std::string line(data, len);
  if (StartsWithNoCase(line, "retry-after:")) {
    char* end = nullptr;
    const char* value = line.c_str() + 12;
    long seconds = std::strtol(value, &end, 10);
    if (end != value && seconds >= 0) {
      t->retry_after = std::min<milliseconds>(milliseconds(seconds * 1000LL), kMaxRetryAfter);
    }
  }
  return len;
}

// Transport failures worth another try; the rest (bad URL, TLS verification, out of memory) would
// fail the same way again.
bool IsRetryableCurlError(CURLcode code) {
  switch (code) {
    case CURLE_COULDNT_RESOLVE_HOST:
    case CURLE_COULDNT_CONNECT:
    case CURLE_OPERATION_TIMEDOUT:
    case CURLE_SEND_ERROR:
    case CURLE_RECV_ERROR:
    case CURLE_GOT_NOTHING:
    case CURLE_PARTIAL_FILE:
    case CURLE_SSL_CONNECT_ERROR:
    case CURLE_HTTP2:
    case CURLE_HTTP2_STREAM:
      return true;
    default:
      return false;
  }
}

// The wait before retry number `retry` (1-based): base * 2^(retry-1), jittered into [50%, 100%]
// so that clients throttled together do not come back together.
milliseconds BackoffDelay(int retry, milliseconds base) {
  thread_local std::mt19937_64 rng{std::random_device{}()};
  double full = static_cast<double>(base.count()) * std::ldexp(1.0, std::min(retry - 1, 20));
  full = std::min(full, static_cast<double>(kMaxBackoff.count()));
  std::uniform_real_distribution<double> jitter(0.5, 1.0);
  return milliseconds(std::llround(full * jitter(rng)));
}

}  // namespace

bool HasControlChars(const std::string& s) {
  return std::any_of(s.begin(), s.end(),
                     [](char c) { return static_cast<unsigned char>(c) < 0x20 || c == 0x7f; });
}

std::string TrimTrailingSlashes(std::string s) {
  while (!s.empty() && s.back() == '/') s.pop_back();
  return s;
}

Status CheckBaseUrl(const std::string& url, std::string_view owner) {
  auto invalid = [owner](const std::string& m) {
    return Status::InvalidParameter(std::string(owner) + m);
  };
  bool https = StartsWithNoCase(url, "https://");
  if (!https && !StartsWithNoCase(url, "http://")) {
    return invalid("base_url must start with http:// or https://");
  }
  if (url.size() <= (https ? 8u : 7u) || url[https ? 8 : 7] == '/') {
    return invalid("base_url has no host");
  }
  if (HasControlChars(url) || url.find(' ') != std::string::npos) {
    return invalid("base_url contains spaces or control characters");
  }
  return Status::Ok();
}

class JsonPostClient::CurlHandle {
 public:
  explicit CurlHandle(CURL* curl) : curl_(curl) {}
  ~CurlHandle() { curl_easy_cleanup(curl_); }
  CurlHandle(const CurlHandle&) = delete;
  CurlHandle& operator=(const CurlHandle&) = delete;
  CURL* get() const { return curl_; }

 private:
  CURL* curl_;
};

JsonPostClient::JsonPostClient(JsonPostOptions options)
    : options_(std::move(options)), where_(options_.label + " " + DisplayUrl(options_.url)) {}

JsonPostClient::~JsonPostClient() = default;

Result<std::unique_ptr<JsonPostClient>> JsonPostClient::Create(JsonPostOptions options,
                                                               std::string_view owner) {
  auto invalid = [owner](const std::string& m) {
    return Status::InvalidParameter(std::string(owner) + m);
  };
  ENGRAM_RETURN_IF_ERROR(CheckBaseUrl(options.url, owner));
  // A CR or LF in the key would let it inject headers.
  if (HasControlChars(options.api_key)) return invalid("api_key contains control characters");
  if (options.connect_timeout.count() <= 0) return invalid("connect_timeout must be > 0");
  if (options.request_timeout.count() <= 0) return invalid("request_timeout must be > 0");
  if (options.max_retries < 0) return invalid("max_retries must be >= 0");
  if (options.retry_base.count() < 0) return invalid("retry_base must be >= 0");
  if (options.max_response_bytes < 1) return invalid("max_response_bytes must be >= 1");
  if (CURLcode rc = EnsureCurlGlobalInit(); rc != CURLE_OK) {
    return Status::Unavailable(std::string(owner) +
                               "curl_global_init failed: " + curl_easy_strerror(rc));
  }
  // The constructor is private (only Create validates), so make_unique cannot reach it.
  return std::unique_ptr<JsonPostClient>(new JsonPostClient(std::move(options)));
}

Result<std::string> JsonPostClient::Post(const std::string& body) const {
  std::unique_ptr<CurlHandle> handle = AcquireHandle();
  if (!handle) return Status::Unavailable(where_ + ": curl_easy_init failed");

  struct SlistDeleter {
    void operator()(curl_slist* l) const { curl_slist_free_all(l); }
  };
  std::unique_ptr<curl_slist, SlistDeleter> headers;
  auto add_header = [&headers](const std::string& h) {
    // On failure curl_slist_append leaves the list untouched (still owned by `headers`).
    curl_slist* next = curl_slist_append(headers.get(), h.c_str());
    if (!next) return false;
    (void)headers.release();  // now owned through `next`, the same list
    headers.reset(next);
    return true;
  };
  bool headers_ok = add_header("Content-Type: application/json") &&
                    add_header("Accept: application/json") &&
                    // No "Expect: 100-continue" round trip for large bodies.
                    add_header("Expect:");
  if (headers_ok && !options_.api_key.empty()) {
    headers_ok = add_header("Authorization: Bearer " + options_.api_key);
  }
  if (!headers_ok) {
    ReleaseHandle(std::move(handle));
    return Status::Unavailable(where_ + ": out of memory building headers");
  }

  Status last;
  for (int attempt = 0;; ++attempt) {
    Transfer transfer;
    transfer.limit = options_.max_response_bytes;

    CURL* curl = handle->get();
    // Reset drops the previous attempt's options but keeps live connections and caches.
    curl_easy_reset(curl);
    curl_easy_setopt(curl, CURLOPT_URL, options_.url.c_str());
    // Timeouts must not use SIGALRM in a multi-threaded server.
    curl_easy_setopt(curl, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(curl, CURLOPT_CONNECTTIMEOUT_MS,
                     static_cast<long>(options_.connect_timeout.count()));
    curl_easy_setopt(curl, CURLOPT_TIMEOUT_MS, static_cast<long>(options_.request_timeout.count()));
#if LIBCURL_VERSION_NUM >= 0x075500  // 7.85: CURLOPT_PROTOCOLS_STR replaces the deprecated bitmask
    curl_easy_setopt(curl, CURLOPT_PROTOCOLS_STR, "http,https");
#endif
    curl_easy_setopt(curl, CURLOPT_FOLLOWLOCATION, 0L);
    curl_easy_setopt(curl, CURLOPT_POST, 1L);
    curl_easy_setopt(curl, CURLOPT_POSTFIELDS, body.data());
    curl_easy_setopt(curl, CURLOPT_POSTFIELDSIZE_LARGE, static_cast<curl_off_t>(body.size()));
    curl_easy_setopt(curl, CURLOPT_HTTPHEADER, headers.get());
    curl_easy_setopt(curl, CURLOPT_USERAGENT, "engram");
    // The size limit applies to the decoded body.
    curl_easy_setopt(curl, CURLOPT_ACCEPT_ENCODING, "");
    curl_easy_setopt(curl, CURLOPT_MAXFILESIZE_LARGE,
                     static_cast<curl_off_t>(options_.max_response_bytes));
    curl_easy_setopt(curl, CURLOPT_WRITEFUNCTION, OnBody);
    curl_easy_setopt(curl, CURLOPT_WRITEDATA, &transfer);
    curl_easy_setopt(curl, CURLOPT_HEADERFUNCTION, OnHeader);
    curl_easy_setopt(curl, CURLOPT_HEADERDATA, &transfer);

    CURLcode rc = curl_easy_perform(curl);
    long http_status = 0;
    curl_easy_getinfo(curl, CURLINFO_RESPONSE_CODE, &http_status);

    bool retryable = false;
    if (transfer.too_large || rc == CURLE_FILESIZE_EXCEEDED) {
      last = Status::Unavailable(where_ + ": response larger than max_response_bytes (" +
                                 std::to_string(options_.max_response_bytes) + ")");
    } else if (rc == CURLE_OPERATION_TIMEDOUT) {
      last = Status::Unavailable(where_ + " timed out after " +
                                 std::to_string(options_.request_timeout.count()) + " ms");
      retryable = IsRetryableCurlError(rc);
    } else if (rc != CURLE_OK) {
      // libcurl's fixed phrase, not its error buffer, which can quote what the peer sent (a TLS
      // alert's text, a malformed header).
      last = Status::Unavailable(where_ + ": " + curl_easy_strerror(rc));
      retryable = IsRetryableCurlError(rc);
    } else if (http_status >= 200 && http_status < 300) {
      ReleaseHandle(std::move(handle));
      return std::move(transfer.body);
    } else {
      // The status code only: error bodies often echo the request (a conversation, a document)
      // and this message is stored with events and returned by the API.
      std::string message = where_ + " answered HTTP " + std::to_string(http_status);
      if (http_status == 429 || http_status >= 500) {
        last = Status::Unavailable(std::move(message));
        retryable = true;
      } else if (http_status == 400 || http_status == 413 || http_status == 422) {
        last = Status::InvalidParameter(std::move(message));
      } else {
        // 401/403/404 and redirects: the client is misconfigured, not the caller's input.
        last = Status::Unavailable(std::move(message));
      }
    }

    if (!retryable || attempt >= options_.max_retries) {
      ReleaseHandle(std::move(handle));
      if (attempt > 0) {
        return Status(last.code(),
                      last.message() + " (after " + std::to_string(attempt + 1) + " attempts)");
      }
      return last;
    }
    milliseconds delay = BackoffDelay(attempt + 1, options_.retry_base);
    if (transfer.retry_after && *transfer.retry_after > delay) delay = *transfer.retry_after;
    std::this_thread::sleep_for(delay);
  }
}

std::unique_ptr<JsonPostClient::CurlHandle> JsonPostClient::AcquireHandle() const {
  {
    MutexLock lock(&pool_mu_);
    if (!pool_.empty()) {
      std::unique_ptr<CurlHandle> handle = std::move(pool_.back());
      pool_.pop_back();
      return handle;
    }
  }
  CURL* curl = curl_easy_init();
  if (!curl) return nullptr;
  return std::make_unique<CurlHandle>(curl);
}

void JsonPostClient::ReleaseHandle(std::unique_ptr<CurlHandle> handle) const {
  MutexLock lock(&pool_mu_);
  if (pool_.size() < kMaxPooledHandles) pool_.push_back(std::move(handle));
}

}  // namespace engram
