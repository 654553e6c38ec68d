// API keys: the three accepted header forms, 401 InvalidApiKey otherwise, /healthz open, keys from
// --api-key flags and from ENGRAM_API_KEYS (docs/api/README.md, Common); /metrics needs a key for
// every workspace; a workspace-limited key reaches only its workspace; an empty key is refused at
// start.
#include <unistd.h>

#include <cstdlib>

#include "test_util.h"

namespace engram::testing {
namespace {

using nlohmann::json;

class AuthTest : public SharedServerTest {
 protected:
  ServerOptions Options() const override {
    ServerOptions o;
    o.extra_args = {"--api-key", "k1"};
    return o;
  }

  json SomeAdd() {
    return AddBody(UniqueId("eval:run:auth"), UniqueId("user"), "s",
                   json::array({Message("Auth probe " + UniqueWord())}));
  }
};

TEST_F(AuthTest, MissingKeyIs401) {
  EXPECT_TRUE(IsError(client().Post(kAddPath, SomeAdd()), 401, "InvalidApiKey"));
  EXPECT_TRUE(IsError(client().Post(kSearchPath, SearchBody(UniqueId("user"), "probe")), 401,
                      "InvalidApiKey"));
}

TEST_F(AuthTest, WrongKeyIs401) {
  json search = SearchBody(UniqueId("user"), "probe");
  for (const Headers& h : std::vector<Headers>{
           {{"Authorization", "Bearer k2"}},
           {{"Authorization", "Bearer k1x"}},
           {{"Authorization", "Bearer K1"}},
           {{"Authorization", "Bearer "}},
           {{"Authorization", "Bearer"}},
           {{"Authorization", "k1"}},
           {{"Authorization", "Basic k1"}},
           {{"Authorization", "Token nope"}},
           {{"X-Api-Key", "nope"}},
           {{"X-Api-Key", ""}},
       }) {
    SCOPED_TRACE(h.begin()->first + ": " + h.begin()->second);
    EXPECT_TRUE(IsError(client().Post(kSearchPath, search, h), 401, "InvalidApiKey"));
  }
  // Writes are refused the same way.
  json add = SomeAdd();
  EXPECT_TRUE(IsError(client().Post(kAddPath, add, {{"Authorization", "Bearer wrong"}}), 401,
                      "InvalidApiKey"));
}

TEST_F(AuthTest, AcceptedKeyForms) {
  for (const Headers& h : std::vector<Headers>{
           {{"Authorization", "Bearer k1"}},
           {{"Authorization", "Token k1"}},
           {{"X-Api-Key", "k1"}},
           {{"x-api-key", "k1"}},
           {{"authorization", "bearer k1"}},
       }) {
    SCOPED_TRACE(h.begin()->first + ": " + h.begin()->second);
    json add = SomeAdd();
    EXPECT_TRUE(IsAddSuccess(client().Post(kAddPath, add, h), add));
    HttpResponse search =
        client().Post(kSearchPath, SearchBody(add["user_id"].get<std::string>(), "Auth probe"), h);
    EXPECT_EQ(search.status, 200) << search.Describe();
    EXPECT_TRUE(IsJsonResponse(search));
  }
}

TEST_F(AuthTest, MissingKeyIs401BeforeTheWorkspaceNameIsLookedAt) {
  // A caller without a key learns nothing about its request, not even that the workspace name
  // is malformed; with the key, the same request gets the 400 naming the problem.
  const std::string bad =
      "/v4/openapi/workspaces/bad%20name!/memory/agentic-memory/memories/search";
  const json body = {{"query", "q"}, {"user_id", "u"}};
  EXPECT_TRUE(IsError(client().Post(bad, body), 401, "InvalidApiKey"));
  EXPECT_TRUE(
      IsError(client().Post(bad, body, {{"Authorization", "Bearer k1"}}), 400, "InvalidParameter"));
}

TEST_F(AuthTest, HealthzNeedsNoKey) {
  HttpResponse resp = client().Get("/healthz");
  EXPECT_EQ(resp.status, 200) << resp.Describe();
  EXPECT_EQ(resp.body.substr(0, 2), "ok");
}

TEST(AuthKeysTest, KeysFromEnvironment) {
  ENGRAM_REQUIRE_BINARY();
  ServerOptions o;
  o.env["ENGRAM_API_KEYS"] = "a,b";
  ServerProcess server(o);
  ASSERT_TRUE(server.Start());
  HttpClient client(server.BaseUrl());
  json search = SearchBody(UniqueId("user"), "probe");
  EXPECT_EQ(client.Post(kSearchPath, search, {{"Authorization", "Bearer a"}}).status, 200);
  EXPECT_EQ(client.Post(kSearchPath, search, {{"X-Api-Key", "b"}}).status, 200);
  EXPECT_TRUE(IsError(client.Post(kSearchPath, search, {{"Authorization", "Bearer a,b"}}), 401,
                      "InvalidApiKey"));
  EXPECT_TRUE(IsError(client.Post(kSearchPath, search, {{"Authorization", "Bearer c"}}), 401,
                      "InvalidApiKey"));
  EXPECT_TRUE(IsError(client.Post(kSearchPath, search), 401, "InvalidApiKey"));
  EXPECT_EQ(client.Get("/healthz").status, 200);
}

TEST(AuthKeysTest, DevModeRefusesNonLoopback) {
  // No key configured: development mode listens on loopback only.
  ENGRAM_REQUIRE_BINARY();
  ServerOptions o;
  o.listen = "0.0.0.0:0";
  o.start_timeout = std::chrono::seconds(5);
  ServerProcess server(o);
  ::testing::AssertionResult started = server.Start();
  // Refusing to start is right; so is falling back to loopback. Listening on all interfaces is not.
  if (started) {
    EXPECT_EQ(server.Output().find("listening on 0.0.0.0"), std::string::npos)
        << "dev mode listens on all interfaces:\n"
        << server.Output();
  }
}

TEST(AuthKeysTest, SeveralKeyFlags) {
  ENGRAM_REQUIRE_BINARY();
  ServerOptions o;
  o.extra_args = {"--api-key", "first", "--api-key", "second"};
  ServerProcess server(o);
  ASSERT_TRUE(server.Start());
  HttpClient client(server.BaseUrl());
  json search = SearchBody(UniqueId("user"), "probe");
  EXPECT_EQ(client.Post(kSearchPath, search, {{"Authorization", "Bearer first"}}).status, 200);
  EXPECT_EQ(client.Post(kSearchPath, search, {{"Authorization", "Token second"}}).status, 200);
  EXPECT_TRUE(IsError(client.Post(kSearchPath, search, {{"Authorization", "Bearer third"}}), 401,
                      "InvalidApiKey"));
}

TEST(AuthKeysTest, AWorkspaceKeyReachesOnlyItsWorkspaceOnEveryApi) {
  // The workspace a path names ({workspace_name} on the Agentic Memory paths, {workspace} on the
  // MCP mount) is the one the key must be valid for, before anything is read.
  ENGRAM_REQUIRE_BINARY();
  ServerOptions o;
  o.extra_args = {"--api-key", "team:alpha"};
  ServerProcess server(o);
  ASSERT_TRUE(server.Start());
  HttpClient client(server.BaseUrl());
  const Headers key = {{"Authorization", "Bearer team"}};
  const json search = {{"query", "coffee"}, {"user_id", "alice"}};
  for (const std::string ws : {"alpha", "beta"}) {
    const int want = ws == "alpha" ? 200 : 403;
    const std::string v4 = "/v4/openapi/workspaces/" + ws + "/memory/agentic-memory";
    const std::string v3 = "/v3/openapi/workspaces/" + ws + "/memory/agentic-memory";
    EXPECT_EQ(client.Post(v4 + "/memories/search", search, key).status, want) << ws;
    EXPECT_EQ(client.Get(v4 + "/memories?user_id=alice", key).status, want) << ws;
    EXPECT_EQ(client.Get(v3 + "/skills?user_id=alice", key).status, want) << ws;
    EXPECT_EQ(client.Get(v3 + "/knowledge-bases", key).status, want) << ws;
    EXPECT_EQ(client.Get(v3 + "/health", key).status, want) << ws;
  }
  // The MCP mount: refused before the request is read for another workspace.
  const json initialize = {{"jsonrpc", "2.0"},
                           {"id", 1},
                           {"method", "initialize"},
                           {"params",
                            {{"protocolVersion", "2025-06-18"},
                             {"capabilities", json::object()},
                             {"clientInfo", {{"name", "t"}, {"version", "1"}}}}}};
  Headers mcp = key;
  mcp["Accept"] = "application/json, text/event-stream";
  EXPECT_EQ(client.Post("/mcp/workspaces/beta", initialize, mcp).status, 403);
  EXPECT_EQ(client.Post("/mcp/workspaces/alpha", initialize, mcp).status, 200);
}

TEST(AuthKeysTest, MetricsNeedAKeyForEveryWorkspace) {
  // The metrics text names every workspace: a workspace-limited key may not read it.
  ENGRAM_REQUIRE_BINARY();
  ServerOptions o;
  o.extra_args = {"--api-key", "admin", "--api-key", "team:alpha"};
  ServerProcess server(o);
  ASSERT_TRUE(server.Start());
  HttpClient client(server.BaseUrl());
  EXPECT_TRUE(IsError(client.Get("/metrics"), 401, "InvalidApiKey"));
  EXPECT_TRUE(
      IsError(client.Get("/metrics", {{"Authorization", "Bearer nope"}}), 401, "InvalidApiKey"));
  HttpResponse limited = client.Get("/metrics", {{"Authorization", "Bearer team"}});
  EXPECT_EQ(limited.status, 403) << limited.Describe();
  HttpResponse admin = client.Get("/metrics", {{"Authorization", "Bearer admin"}});
  ASSERT_EQ(admin.status, 200) << admin.Describe();
  EXPECT_NE(admin.body.find("engram_"), std::string::npos);
  // The probe stays open.
  EXPECT_EQ(client.Get("/healthz").status, 200);
}

TEST(AuthKeysTest, EmptyKeyIsRefusedAtStart) {
  // An empty key is a configuration mistake, not a request for keyless development mode.
  ENGRAM_REQUIRE_BINARY();
  char config[] = "/tmp/engram-empty-key-XXXXXX";
  const int fd = mkstemp(config);
  ASSERT_GE(fd, 0);
  const std::string toml = "[serve]\napi-key = \"\"\n";
  ASSERT_EQ(write(fd, toml.data(), toml.size()), static_cast<ssize_t>(toml.size()));
  close(fd);
  for (const auto& [name, o] : std::vector<std::pair<std::string, ServerOptions>>{
           {"config file",
            [&] {
              ServerOptions o;
              o.extra_args = {"--config", config};
              return o;
            }()},
           {"flag",
            [] {
              ServerOptions o;
              o.extra_args = {"--api-key", ""};
              return o;
            }()},
           {"blank flag",
            [] {
              ServerOptions o;
              o.extra_args = {"--api-key", "  "};
              return o;
            }()},
           {"environment",
            [] {
              ServerOptions o;
              o.env["ENGRAM_API_KEYS"] = "";
              return o;
            }()},
       }) {
    SCOPED_TRACE(name);
    ServerOptions opts = o;
    opts.start_timeout = std::chrono::seconds(5);
    ServerProcess server(opts);
    EXPECT_FALSE(server.Start());
    EXPECT_NE(server.Output().find("an empty API key was given"), std::string::npos)
        << server.Output();
  }
  unlink(config);
}

}  // namespace
}  // namespace engram::testing
