// RequestGuard: what a web page in the user's browser may not do to an Engram server, checked in
// front of every route (REST, MCP, metrics) from the request's head, before any body byte is read.
//
//   - Origin: a request that carries one (every browser request that could change something) must
//     come from an allowed origin: a loopback origin of this server (the page was served by this
//     server under a loopback name: same host and port as the Host header) or one the operator
//     lists (--allowed-origin). Else 403. A literal "null" origin is never allowed.
//   - Host (development mode only: no API keys, loopback listener): the Host header must name this
//     server through a loopback name or address (localhost, *.localhost, 127.0.0.0/8, [::1]) or a
//     host the operator lists (--allowed-host). Else 403: a DNS name rebound to 127.0.0.1 is
//     refused even when its page is same-origin with the server. With keys the key protects.
//   - Body type: a request with an Origin and a body must send it as application/json, never as a
//     form or text/plain (the "simple" requests a page can send without a CORS preflight): 415.
//     Clients without an Origin (curl -d, SDKs) keep any content type.
//   - CORS stays off unless origins are listed: a preflight from a listed origin is answered with
//     the methods and headers the API uses; every other preflight is refused by the Origin rule.
//
// Thread-safety: immutable after construction; safe to use concurrently.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"
#include "server/http_types.h"

namespace engram {

struct RequestGuardOptions {
  // No API keys configured (the server listens on loopback only): the Host rule applies.
  bool dev_mode = true;
  // Origins a browser page may call from, e.g. "https://console.example.com" (scheme, host and
  // port as the browser sends them; compared without case, a trailing "/" ignored).
  std::vector<std::string> allowed_origins;
  // Host names (without port) a development-mode server answers besides loopback ones.
  std::vector<std::string> allowed_hosts;
};

class RequestGuard {
 public:
  explicit RequestGuard(RequestGuardOptions options);

  // Ok, or the refusal: kForbidden (origin or host not allowed) or kUnsupportedMediaType (a
  // browser's body that is not JSON). Messages name the header, never echo more than 200 bytes.
  Status Check(const HttpRequest& head) const;

  // The answer to a CORS preflight (OPTIONS with Origin and Access-Control-Request-Method) from a
  // listed origin: 204 with the Access-Control-Allow-* headers. nullopt for anything else (a
  // preflight from another origin is refused by Check).
  std::optional<HttpResponse> Preflight(const HttpRequest& head) const;

  // Adds Access-Control-Allow-Origin (and Vary: Origin) when the request comes from a listed
  // origin, so that page can read the answer.
  void AddCorsHeaders(const HttpRequest& request, HttpResponse& response) const;

  // Whether `host` (no port, lower case; IPv6 in brackets) is a loopback name or address.
  static bool IsLoopbackHost(std::string_view host);

 private:
  bool Listed(std::string_view origin) const;
  RequestGuardOptions options_;
};

}  // namespace engram
