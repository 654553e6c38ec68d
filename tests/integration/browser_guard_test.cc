// The request guard through a real development-mode server (docs/operations.md, "Browsers"):
// every API family refuses the three requests a web page in the user's browser could send — a
// cross-site simple POST (text/plain or a form) with a foreign Origin, a foreign Host (a DNS name
// rebound to 127.0.0.1) and a foreign Origin on a JSON request — and stores nothing, while curl
// (`curl -d` without a content type included) and a page the server served itself keep working.
#include "test_util.h"

namespace engram::testing {
namespace {

using nlohmann::json;

class BrowserGuardTest : public SharedServerTest {
 protected:
  std::string Authority() { return "127.0.0.1:" + std::to_string(server().port()); }
};

struct Route {
  std::string family;
  std::string method;
  std::string path;
  std::string body;  // JSON text ("" for none)
};

std::vector<Route> Routes(const std::string& user) {
  const std::string p4 = "/v4/openapi/workspaces/default/memory/agentic-memory";
  const std::string p3 = "/v3/openapi/workspaces/default/memory/agentic-memory";
  const json add = AddBody(UniqueId("r"), user, "s", json::array({Message("planted memory")}));
  const json v4_add = {{"messages", {{{"role", "user"}, {"content", "planted memory"}}}},
                       {"user_id", user},
                       {"infer", false}};
  return {
      {"leaderboard", "POST", "/leaderboard/add", add.dump()},
      {"leaderboard", "POST", "/leaderboard/search", SearchBody(user, "planted").dump()},
      {"v4", "POST", p4 + "/memories/add", v4_add.dump()},
      {"v4", "GET", p4 + "/memories?user_id=" + user, ""},
      {"v3", "POST", p3 + "/skills/search", json{{"query", "x"}, {"user_id", user}}.dump()},
      {"v3", "GET", p3 + "/health", ""},
      {"mem0", "POST", "/v3/memories/add/",
       json{{"messages", {{{"role", "user"}, {"content", "planted memory"}}}}, {"user_id", user}}
           .dump()},
      {"mcp", "POST", "/mcp",
       R"({"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}})"},
      {"ops", "GET", "/metrics", ""},
      {"ops", "GET", "/healthz", ""},
  };
}

TEST_F(BrowserGuardTest, EveryFamilyRefusesBrowserBorneRequestsAndStoresNothing) {
  const std::string user = UniqueId("victim");
  for (const Route& r : Routes(user)) {
    SCOPED_TRACE(r.family + " " + r.method + " " + r.path);
    const bool post = r.method == "POST";
    // 1. A cross-site simple request: text/plain (or a form) with a foreign Origin.
    for (const char* type : {"text/plain", "application/x-www-form-urlencoded"}) {
      HttpResponse simple =
          client().Request(r.method, r.path, r.body,
                           {{"Origin", "http://evil.example.com"}, {"Content-Type", type}});
      EXPECT_EQ(simple.status, 403) << simple.Describe();
    }
    // 2. A rebound DNS name: the page is same-origin with itself, the Host is foreign.
    HttpResponse rebound =
        client().Request(r.method, r.path, r.body,
                         {{"Host", "evil.example.com:" + std::to_string(server().port())},
                          {"Content-Type", "application/json"}});
    EXPECT_EQ(rebound.status, 403) << rebound.Describe();
    HttpResponse prefix = client().Request(
        r.method, r.path, r.body,
        {{"Host", "127.0.0.1.evil.example.com"}, {"Origin", "http://127.0.0.1.evil.example.com"}});
    EXPECT_EQ(prefix.status, 403) << "a name that starts like a loopback address is not one";
    // 3. A foreign Origin on a JSON request.
    HttpResponse json_foreign = client().Request(
        r.method, r.path, r.body,
        {{"Origin", "http://evil.example.com"}, {"Content-Type", "application/json"}});
    EXPECT_EQ(json_foreign.status, 403) << json_foreign.Describe();
    // curl: no Origin; `curl -d` sends a form type (MCP clients always send JSON, as its
    // transport requires).
    const char* curl_type =
        r.family == "mcp" ? "application/json" : "application/x-www-form-urlencoded";
    HttpResponse curl = client().Request(r.method, r.path, r.body,
                                         post ? Headers{{"Content-Type", curl_type}} : Headers{});
    EXPECT_LT(curl.status, 400) << curl.Describe();
    // A page this server served: its own loopback origin, JSON.
    HttpResponse own = client().Request(
        r.method, r.path, r.body,
        {{"Origin", "http://" + Authority()}, {"Content-Type", "application/json"}});
    EXPECT_LT(own.status, 400) << own.Describe();
    if (post) {
      HttpResponse own_form =
          client().Request(r.method, r.path, r.body,
                           {{"Origin", "http://" + Authority()}, {"Content-Type", "text/plain"}});
      EXPECT_EQ(own_form.status, 415) << own_form.Describe();
    }
  }
}

// Nothing a refused request carried was stored: only the adds curl and the server's own page sent
// are there (the Leaderboard add is idempotent on its request_id, so one message).
TEST_F(BrowserGuardTest, RefusedAddsLeaveNoTrace) {
  const std::string user = UniqueId("victim");
  const json add =
      AddBody(UniqueId("r"), user, "s", json::array({Message("planted zqxjv memory")}));
  for (const Headers& h :
       std::vector<Headers>{{{"Origin", "http://evil.example.com"}, {"Content-Type", "text/plain"}},
                            {{"Host", "evil.example.com"}, {"Content-Type", "application/json"}}}) {
    EXPECT_EQ(client().Request("POST", std::string(kAddPath), add.dump(), h).status, 403);
  }
  EXPECT_TRUE(SearchData(client(), user, "zqxjv planted").empty());
}

TEST_F(BrowserGuardTest, PreflightsAreRefusedWithoutListedOrigins) {
  HttpResponse preflight = client().Request(
      "OPTIONS", std::string(kAddPath), "",
      {{"Origin", "http://evil.example.com"}, {"Access-Control-Request-Method", "POST"}});
  EXPECT_EQ(preflight.status, 403) << preflight.Describe();
  EXPECT_TRUE(preflight.Header("access-control-allow-origin").empty());
}

class ListedOriginTest : public SharedServerTest {
 protected:
  ServerOptions Options() const override {
    ServerOptions o;
    o.extra_args = {"--allowed-origin", "https://console.example.com", "--allowed-host",
                    "engram.internal"};
    return o;
  }
};

TEST_F(ListedOriginTest, ListedOriginsGetCorsAndListedHostsAreServed) {
  HttpResponse preflight = client().Request("OPTIONS", std::string(kSearchPath), "",
                                            {{"Origin", "https://console.example.com"},
                                             {"Access-Control-Request-Method", "POST"},
                                             {"Access-Control-Request-Headers", "content-type"}});
  EXPECT_EQ(preflight.status, 204) << preflight.Describe();
  EXPECT_EQ(preflight.Header("access-control-allow-origin"), "https://console.example.com");
  HttpResponse search = client().Request(
      "POST", std::string(kSearchPath), SearchBody(UniqueId("u"), "x").dump(),
      {{"Origin", "https://console.example.com"}, {"Content-Type", "application/json"}});
  EXPECT_EQ(search.status, 200) << search.Describe();
  EXPECT_EQ(search.Header("access-control-allow-origin"), "https://console.example.com");
  EXPECT_EQ(client().Request("GET", "/healthz", "", {{"Host", "engram.internal"}}).status, 200);
  EXPECT_EQ(client().Request("GET", "/healthz", "", {{"Host", "other.internal"}}).status, 403);
}

}  // namespace
}  // namespace engram::testing
