#include "api/request_guard.h"

#include <gtest/gtest.h>

namespace engram {
namespace {

HttpRequest Req(std::string method, std::vector<std::pair<std::string, std::string>> headers) {
  HttpRequest r;
  r.method = std::move(method);
  r.path = "/leaderboard/add";
  r.headers = std::move(headers);
  return r;
}

StatusCode CodeOf(const RequestGuard& g, const HttpRequest& r) { return g.Check(r).code(); }

TEST(RequestGuardTest, LoopbackHostsAreNamesAndAddressesNotPrefixes) {
  for (const char* h : {"localhost", "app.localhost", "127.0.0.1", "127.1.2.3", "[::1]"}) {
    EXPECT_TRUE(RequestGuard::IsLoopbackHost(h)) << h;
  }
  for (const char* h :
       {"127.0.0.1.evil.example.com", "127.evil.com", "localhost.evil.com", "evil-localhost",
        "128.0.0.1", "127.0.0", "127.0.0.256", "[::2]", "", "0x7f.0.0.1", ".localhost"}) {
    EXPECT_FALSE(RequestGuard::IsLoopbackHost(h)) << h;
  }
}

// The three browser-borne cases: a foreign Origin, a foreign Host (DNS rebinding) and a simple
// (form or text/plain) body; curl-style clients keep working.
TEST(RequestGuardTest, DevelopmentModeRefusesBrowserBorneRequests) {
  RequestGuard g({.dev_mode = true});
  // curl: no Origin, any body type.
  EXPECT_TRUE(g.Check(Req("POST", {{"host", "127.0.0.1:8080"},
                                   {"content-type", "application/x-www-form-urlencoded"},
                                   {"content-length", "10"}}))
                  .ok());
  EXPECT_TRUE(g.Check(Req("GET", {{"host", "localhost:8080"}})).ok());
  EXPECT_TRUE(g.Check(Req("GET", {})).ok()) << "no Host at all: not a browser";
  // A foreign page posting a simple request.
  EXPECT_EQ(CodeOf(g, Req("POST", {{"host", "127.0.0.1:8080"},
                                   {"origin", "http://evil.example.com"},
                                   {"content-type", "text/plain"},
                                   {"content-length", "10"}})),
            StatusCode::kForbidden);
  // A rebound name, same-origin with itself, reading.
  EXPECT_EQ(CodeOf(g, Req("GET", {{"host", "evil.example.com:8080"}})), StatusCode::kForbidden);
  EXPECT_EQ(CodeOf(g, Req("GET", {{"host", "127.0.0.1.evil.example.com:8080"},
                                  {"origin", "http://127.0.0.1.evil.example.com:8080"}})),
            StatusCode::kForbidden);
  // A foreign origin on a JSON search.
  EXPECT_EQ(CodeOf(g, Req("POST", {{"host", "127.0.0.1:8080"},
                                   {"origin", "http://evil.example.com"},
                                   {"content-type", "application/json"},
                                   {"content-length", "10"}})),
            StatusCode::kForbidden);
  // Another local web app (another port) and a "null" origin are foreign too.
  EXPECT_EQ(
      CodeOf(g, Req("GET", {{"host", "127.0.0.1:8080"}, {"origin", "http://127.0.0.1:3000"}})),
      StatusCode::kForbidden);
  EXPECT_EQ(CodeOf(g, Req("GET", {{"host", "127.0.0.1:8080"}, {"origin", "null"}})),
            StatusCode::kForbidden);
  // A page this server served (same loopback origin): JSON bodies only.
  const std::vector<std::pair<std::string, std::string>> own = {
      {"host", "localhost:8080"}, {"origin", "http://localhost:8080"}, {"content-length", "2"}};
  auto with_type = [&](const char* type) {
    auto h = own;
    h.emplace_back("content-type", type);
    return Req("POST", h);
  };
  EXPECT_TRUE(g.Check(with_type("application/json; charset=utf-8")).ok());
  EXPECT_EQ(CodeOf(g, with_type("text/plain")), StatusCode::kUnsupportedMediaType);
  EXPECT_EQ(CodeOf(g, with_type("application/x-www-form-urlencoded")),
            StatusCode::kUnsupportedMediaType);
  EXPECT_EQ(CodeOf(g, with_type("multipart/form-data; boundary=x")),
            StatusCode::kUnsupportedMediaType);
  EXPECT_EQ(CodeOf(g, Req("POST", own)), StatusCode::kUnsupportedMediaType) << "no type";
  EXPECT_TRUE(
      g.Check(Req("GET", {{"host", "localhost:8080"}, {"origin", "http://localhost:8080"}})).ok());
}

TEST(RequestGuardTest, ListedOriginsAndHostsAreAllowed) {
  RequestGuard g({.dev_mode = true,
                  .allowed_origins = {"https://Console.Example.com/"},
                  .allowed_hosts = {"engram.internal"}});
  EXPECT_TRUE(g.Check(Req("GET", {{"host", "engram.internal:8080"}})).ok());
  EXPECT_TRUE(
      g.Check(Req("GET", {{"host", "127.0.0.1:8080"}, {"origin", "https://console.example.com"}}))
          .ok());
  EXPECT_EQ(CodeOf(g, Req("GET", {{"host", "127.0.0.1:8080"},
                                  {"origin", "https://console.example.com.evil.net"}})),
            StatusCode::kForbidden);
}

// With keys the Host is not checked (the key protects), but an Origin still must be allowed: an
// Origin equal to the request's own non-loopback Host is not enough.
TEST(RequestGuardTest, WithKeysOnlyAllowedOriginsPass) {
  RequestGuard g({.dev_mode = false});
  EXPECT_TRUE(g.Check(Req("GET", {{"host", "mem.example:8080"}})).ok());
  EXPECT_EQ(
      CodeOf(g, Req("GET", {{"host", "mem.example:8080"}, {"origin", "http://mem.example:8080"}})),
      StatusCode::kForbidden);
  EXPECT_TRUE(
      g.Check(Req("GET", {{"host", "localhost:8080"}, {"origin", "http://localhost:8080"}})).ok());
}

TEST(RequestGuardTest, PreflightIsAnsweredOnlyForListedOrigins) {
  RequestGuard g({.dev_mode = false, .allowed_origins = {"https://console.example.com"}});
  auto preflight = [](const char* origin) {
    return Req(
        "OPTIONS",
        {{"host", "mem.example"}, {"origin", origin}, {"access-control-request-method", "POST"}});
  };
  auto ok = g.Preflight(preflight("https://console.example.com"));
  ASSERT_TRUE(ok);
  EXPECT_EQ(ok->status, 204);
  bool allow_origin = false;
  for (const auto& [k, v] : ok->headers) {
    if (k == "Access-Control-Allow-Origin") allow_origin = v == "https://console.example.com";
  }
  EXPECT_TRUE(allow_origin);
  EXPECT_FALSE(g.Preflight(preflight("https://evil.example.com")));
  EXPECT_EQ(CodeOf(g, preflight("https://evil.example.com")), StatusCode::kForbidden);
  HttpResponse r;
  g.AddCorsHeaders(Req("GET", {{"origin", "https://evil.example.com"}}), r);
  EXPECT_TRUE(r.headers.empty()) << "CORS stays off for origins not listed";
  g.AddCorsHeaders(Req("GET", {{"origin", "https://console.example.com"}}), r);
  EXPECT_FALSE(r.headers.empty());
}

}  // namespace
}  // namespace engram
