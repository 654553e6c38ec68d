#include "api/request_guard.h"

#include <algorithm>

#include "common/ascii.h"

namespace engram {
namespace {

std::string_view WithoutTrailingSlash(std::string_view s) {
  while (!s.empty() && s.back() == '/') s.remove_suffix(1);
  return s;
}

// "127.0.0.1:8080" -> "127.0.0.1"; "[::1]:80" -> "[::1]"; lower case. Empty when malformed.
std::string HostOf(std::string_view authority) {
  authority = TrimAsciiSpace(authority);
  if (authority.empty()) return {};
  if (authority.front() == '[') {
    const size_t close = authority.find(']');
    if (close == std::string_view::npos) return {};
    return LowerAscii(authority.substr(0, close + 1));
  }
  return LowerAscii(authority.substr(0, authority.find(':')));
}

// A dotted-decimal IPv4 address whose first byte is 127.
bool IsLoopbackIpv4(std::string_view host) {
  int parts = 0;
  size_t start = 0;
  int first = -1;
  while (true) {
    const size_t dot = host.find('.', start);
    const std::string_view part =
        host.substr(start, dot == std::string_view::npos ? std::string_view::npos : dot - start);
    if (part.empty() || part.size() > 3) return false;
    int value = 0;
    for (char c : part) {
      if (c < '0' || c > '9') return false;
      value = value * 10 + (c - '0');
    }
    if (value > 255) return false;
    if (parts == 0) first = value;
    ++parts;
    if (dot == std::string_view::npos) break;
    start = dot + 1;
  }
  return parts == 4 && first == 127;
}

// The lower-cased authority of an http(s) origin ("http://localhost:8080" -> "localhost:8080"),
// empty when it is not one (a path, credentials, another scheme, "null").
std::string OriginAuthority(std::string_view origin) {
  origin = WithoutTrailingSlash(TrimAsciiSpace(origin));
  const size_t scheme_end = origin.find("://");
  if (scheme_end == std::string_view::npos) return {};
  const std::string scheme = LowerAscii(origin.substr(0, scheme_end));
  if (scheme != "http" && scheme != "https") return {};
  const std::string_view rest = origin.substr(scheme_end + 3);
  if (rest.empty() || rest.find_first_of("/?#@ \t") != std::string_view::npos) return {};
  return LowerAscii(rest);
}

bool IsJsonMediaType(std::string_view content_type) {
  std::string_view type = content_type.substr(0, content_type.find(';'));
  return EqualsIgnoreAsciiCase(TrimAsciiSpace(type), "application/json");
}

bool HasBody(const HttpRequest& head) {
  if (head.Header("transfer-encoding") != nullptr) return true;
  const std::string* length = head.Header("content-length");
  return length != nullptr && TrimAsciiSpace(*length) != "0";
}

std::string Clip(std::string_view s) { return std::string(s.substr(0, 200)); }

}  // namespace

RequestGuard::RequestGuard(RequestGuardOptions options) : options_(std::move(options)) {}

bool RequestGuard::IsLoopbackHost(std::string_view host) {
  if (host == "localhost" || host == "[::1]" || IsLoopbackIpv4(host)) return true;
  constexpr std::string_view kSuffix = ".localhost";
  return host.size() > kSuffix.size() && host.substr(host.size() - kSuffix.size()) == kSuffix;
}

bool RequestGuard::Listed(std::string_view origin) const {
  const std::string_view o = WithoutTrailingSlash(TrimAsciiSpace(origin));
  return std::any_of(options_.allowed_origins.begin(), options_.allowed_origins.end(),
                     [&](const std::string& allowed) {
                       return EqualsIgnoreAsciiCase(WithoutTrailingSlash(allowed), o);
                     });
}

Status RequestGuard::Check(const HttpRequest& head) const {
  const std::string* host_header = head.Header("host");
  if (options_.dev_mode && host_header != nullptr) {
    const std::string host = HostOf(*host_header);
    const bool allowed =
        IsLoopbackHost(host) ||
        std::any_of(options_.allowed_hosts.begin(), options_.allowed_hosts.end(),
                    [&](const std::string& h) { return EqualsIgnoreAsciiCase(h, host); });
    if (!allowed) {
      return Status::Forbidden("Host " + Clip(*host_header) +
                               " is not this server: without API keys Engram answers only "
                               "loopback names (or --allowed-host)");
    }
  }
  const std::string* origin = head.Header("origin");
  if (origin == nullptr) return Status::Ok();  // not a browser
  bool allowed = Listed(*origin);
  if (!allowed && host_header != nullptr) {
    // A page this server served under a loopback name: same host and port as the request.
    const std::string authority = OriginAuthority(*origin);
    allowed = !authority.empty() && IsLoopbackHost(HostOf(authority)) &&
              authority == LowerAscii(TrimAsciiSpace(*host_header));
  }
  if (!allowed) {
    return Status::Forbidden("Origin " + Clip(*origin) +
                             " is not allowed (a page may call Engram only from this server's "
                             "own loopback origin or one listed with --allowed-origin)");
  }
  if (HasBody(head)) {
    const std::string* type = head.Header("content-type");
    if (type == nullptr || !IsJsonMediaType(*type)) {
      return Status(StatusCode::kUnsupportedMediaType,
                    "a request from a browser must send its body as application/json");
    }
  }
  return Status::Ok();
}

std::optional<HttpResponse> RequestGuard::Preflight(const HttpRequest& head) const {
  if (head.method != "OPTIONS") return std::nullopt;
  const std::string* origin = head.Header("origin");
  if (origin == nullptr || head.Header("access-control-request-method") == nullptr ||
      !Listed(*origin)) {
    return std::nullopt;
  }
  HttpResponse r;
  r.status = 204;
  r.content_type.clear();
  r.headers = {{"Access-Control-Allow-Origin", std::string(TrimAsciiSpace(*origin))},
               {"Access-Control-Allow-Methods", "GET, HEAD, POST, PUT, DELETE"},
               {"Access-Control-Allow-Headers",
                "Authorization, Content-Type, X-Api-Key, Mcp-Session-Id, Mcp-Protocol-Version, "
                "Last-Event-ID"},
               {"Access-Control-Max-Age", "600"},
               {"Vary", "Origin"}};
  return r;
}

void RequestGuard::AddCorsHeaders(const HttpRequest& request, HttpResponse& response) const {
  const std::string* origin = request.Header("origin");
  if (origin == nullptr || !Listed(*origin)) return;
  response.headers.emplace_back("Access-Control-Allow-Origin",
                                std::string(TrimAsciiSpace(*origin)));
  response.headers.emplace_back("Access-Control-Expose-Headers",
                                "X-Request-Id, Mcp-Session-Id, Retry-After");
  response.headers.emplace_back("Vary", "Origin");
}

}  // namespace engram
