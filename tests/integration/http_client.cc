#include "http_client.h"

#include <arpa/inet.h>
#include <curl/curl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <memory>
#include <mutex>

namespace engram::testing {

namespace {

constexpr long kTimeoutMs = 10000;

void GlobalInitOnce() {
  static std::once_flag once;
  std::call_once(once, [] { curl_global_init(CURL_GLOBAL_DEFAULT); });
}

std::string Lower(std::string_view s) {
  std::string out(s);
  std::transform(out.begin(), out.end(), out.begin(),
                 [](unsigned char c) { return std::tolower(c); });
  return out;
}

std::string_view Trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() &&
         (s.back() == ' ' || s.back() == '\t' || s.back() == '\r' || s.back() == '\n')) {
    s.remove_suffix(1);
  }
  return s;
}

size_t WriteBody(char* data, size_t size, size_t n, void* user) {
  static_cast<std::string*>(user)->append(data, size * n);
  return size * n;
}

size_t WriteHeader(char* data, size_t size, size_t n, void* user) {
  auto* headers = static_cast<Headers*>(user);
  std::string_view line(data, size * n);
  if (line.rfind("HTTP/", 0) == 0) {
    headers->clear();  // a new response (e.g. after 100 Continue) starts
    return size * n;
  }
  size_t colon = line.find(':');
  if (colon != std::string_view::npos) {
    (*headers)[Lower(Trim(line.substr(0, colon)))] = std::string(Trim(line.substr(colon + 1)));
  }
  return size * n;
}

struct CurlSlistDeleter {
  void operator()(curl_slist* l) const { curl_slist_free_all(l); }
};
struct CurlDeleter {
  void operator()(CURL* c) const { curl_easy_cleanup(c); }
};

}  // namespace

std::string HttpResponse::Header(std::string_view name) const {
  auto it = headers.find(Lower(name));
  return it == headers.end() ? std::string() : it->second;
}

nlohmann::json HttpResponse::Json() const { return nlohmann::json::parse(body, nullptr, false); }

std::string HttpResponse::Describe() const {
  std::string s = "HTTP " + std::to_string(status);
  if (!error.empty()) s += " (transport error: " + error + ")";
  s += " body: " + (body.size() > 600
                        ? body.substr(0, 600) + "…[" + std::to_string(body.size()) + " bytes]"
                        : body);
  return s;
}

HttpClient::HttpClient(std::string base_url) : base_url_(std::move(base_url)) { GlobalInitOnce(); }

HttpResponse HttpClient::Post(std::string_view path, std::string_view body,
                              const Headers& headers) const {
  return Request("POST", path, body, headers);
}

HttpResponse HttpClient::Post(std::string_view path, const nlohmann::json& body,
                              const Headers& headers) const {
  return Request("POST", path, body.dump(), headers);
}

HttpResponse HttpClient::Get(std::string_view path, const Headers& headers) const {
  return Request("GET", path, {}, headers);
}

HttpResponse HttpClient::Delete(std::string_view path, const Headers& headers) const {
  return Request("DELETE", path, {}, headers);
}

HttpResponse HttpClient::Request(std::string_view method, std::string_view path,
                                 std::string_view body, const Headers& headers) const {
  HttpResponse resp;
  std::unique_ptr<CURL, CurlDeleter> curl(curl_easy_init());
  if (!curl) {
    resp.error = "curl_easy_init failed";
    return resp;
  }
  std::string url = base_url_ + std::string(path);
  std::string method_str(method);
  CURL* c = curl.get();
  curl_easy_setopt(c, CURLOPT_URL, url.c_str());
  curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, kTimeoutMs);
  curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT_MS, kTimeoutMs);
  curl_easy_setopt(c, CURLOPT_PROXY, "");  // never route loopback tests through an env proxy
  curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, &WriteBody);
  curl_easy_setopt(c, CURLOPT_WRITEDATA, &resp.body);
  curl_easy_setopt(c, CURLOPT_HEADERFUNCTION, &WriteHeader);
  curl_easy_setopt(c, CURLOPT_HEADERDATA, &resp.headers);

  bool has_body = method == "POST" || method == "PUT" || method == "PATCH" || !body.empty();
  if (method == "GET" && body.empty()) {
    curl_easy_setopt(c, CURLOPT_HTTPGET, 1L);
  } else if (method == "HEAD") {
    curl_easy_setopt(c, CURLOPT_NOBODY, 1L);  // else curl waits for the body Content-Length names
  } else if (has_body) {
    curl_easy_setopt(c, CURLOPT_POSTFIELDS, body.data());
    curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE_LARGE, static_cast<curl_off_t>(body.size()));
    if (method != "POST") curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, method_str.c_str());
  } else {
    curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, method_str.c_str());
  }

  curl_slist* raw_list = nullptr;
  bool has_content_type = false;
  for (const auto& [k, v] : headers) {
    if (Lower(k) == "content-type") has_content_type = true;
    std::string line = v.empty() ? k + ";" : k + ": " + v;  // "Name;" sends an empty header
    raw_list = curl_slist_append(raw_list, line.c_str());
  }
  if (has_body && !has_content_type)
    raw_list = curl_slist_append(raw_list, "Content-Type: application/json");
  // Send bodies at once, as the leaderboard's Python client does (no Expect: 100-continue wait).
  raw_list = curl_slist_append(raw_list, "Expect:");
  std::unique_ptr<curl_slist, CurlSlistDeleter> list(raw_list);
  curl_easy_setopt(c, CURLOPT_HTTPHEADER, list.get());

  auto start = std::chrono::steady_clock::now();
  CURLcode rc = curl_easy_perform(c);
  resp.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  if (rc != CURLE_OK) {
    resp.error = curl_easy_strerror(rc);
    long code = 0;
    curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &code);
    resp.status = code;  // a response may have arrived before e.g. a send error
    return resp;
  }
  curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &resp.status);
  return resp;
}

// ---------------------------------------------------------------------------------------------
// RawSocket

RawSocket::~RawSocket() { Close(); }

RawSocket::RawSocket(RawSocket&& other) noexcept : fd_(other.fd_) { other.fd_ = -1; }

RawSocket& RawSocket::operator=(RawSocket&& other) noexcept {
  if (this != &other) {
    Close();
    fd_ = other.fd_;
    other.fd_ = -1;
  }
  return *this;
}

void RawSocket::Close() {
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
}

bool RawSocket::Connect(int port) {
  Close();
  int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return false;
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
    ::close(fd);
    return false;
  }
  int one = 1;
  ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  fd_ = fd;
  return true;
}

bool RawSocket::Send(std::string_view bytes) {
  if (fd_ < 0) return false;
  while (!bytes.empty()) {
    ssize_t n = ::send(fd_, bytes.data(), bytes.size(), MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    bytes.remove_prefix(static_cast<size_t>(n));
  }
  return true;
}

namespace {

// True when `data` holds one complete HTTP response (headers + Content-Length body).
bool CompleteMessage(const std::string& data) {
  size_t end = data.find("\r\n\r\n");
  if (end == std::string::npos) return false;
  std::string head = Lower(std::string_view(data).substr(0, end));
  size_t cl = head.find("\r\ncontent-length:");
  if (cl == std::string::npos) return false;  // read until close
  size_t len = std::strtoul(head.c_str() + cl + 17, nullptr, 10);
  return data.size() >= end + 4 + len;
}

}  // namespace

std::string RawSocket::Receive(std::chrono::milliseconds timeout, bool stop_at_message_end) {
  std::string out;
  if (fd_ < 0) return out;
  auto deadline = std::chrono::steady_clock::now() + timeout;
  char buf[8192];
  for (;;) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) break;
    pollfd pfd{fd_, POLLIN, 0};
    int pr = ::poll(&pfd, 1, static_cast<int>(left.count()));
    if (pr < 0 && errno == EINTR) continue;
    if (pr <= 0) break;
    ssize_t n = ::recv(fd_, buf, sizeof buf, 0);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    out.append(buf, static_cast<size_t>(n));
    if (stop_at_message_end && CompleteMessage(out)) break;
  }
  return out;
}

bool RawSocket::WaitClosed(std::chrono::milliseconds timeout, std::string* received) {
  if (fd_ < 0) return true;
  auto deadline = std::chrono::steady_clock::now() + timeout;
  char buf[8192];
  for (;;) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) return false;
    pollfd pfd{fd_, POLLIN, 0};
    int pr = ::poll(&pfd, 1, static_cast<int>(left.count()));
    if (pr < 0 && errno == EINTR) continue;
    if (pr <= 0) return false;
    ssize_t n = ::recv(fd_, buf, sizeof buf, 0);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return true;  // EOF or reset
    if (received != nullptr) received->append(buf, static_cast<size_t>(n));
  }
}

std::string RawExchange(int port, std::string_view request, std::chrono::milliseconds timeout) {
  RawSocket s;
  if (!s.Connect(port)) return {};
  s.Send(request);
  return s.Receive(timeout);
}

int RawStatus(std::string_view response) {
  if (response.rfind("HTTP/1.", 0) != 0) return 0;
  size_t sp = response.find(' ');
  if (sp == std::string_view::npos || sp + 4 > response.size()) return 0;
  int code = 0;
  for (size_t i = sp + 1; i < sp + 4; ++i) {
    if (response[i] < '0' || response[i] > '9') return 0;
    code = code * 10 + (response[i] - '0');
  }
  return code;
}

}  // namespace engram::testing
