// The mem0-compatible API against a real server (docs/mem0.md): refused requests store nothing
// and name the field, keys never reach another workspace, unsupported features answer 501,
// memories cross between the mem0 and V4 APIs, and acknowledged adds survive kill -9.
// The official mem0 clients themselves are driven by tests/mem0.
#include <thread>

#include "test_util.h"

namespace engram::testing {
namespace {

using nlohmann::json;

const Headers kAdmin = {{"Authorization", "Token admin"}};
const Headers kTeamA = {{"Authorization", "Token team-a"}};
const Headers kTeamB = {{"Authorization", "Token team-b"}};

ServerOptions Mem0Options() {
  ServerOptions o;
  o.extra_args = {"--api-key", "admin", "--api-key", "team-a:ws-a", "--api-key", "team-b:ws-b"};
  return o;
}

class Mem0Test : public SharedServerTest {
 protected:
  ServerOptions Options() const override { return Mem0Options(); }

  // Adds one verbatim message and waits for its event; returns the memory id ("" on failure).
  std::string AddVerbatim(const std::string& user, const std::string& text, const Headers& key) {
    HttpResponse r = client().Post(
        "/v3/memories/add/", json{{"messages", text}, {"user_id", user}, {"infer", false}}, key);
    if (r.status != 200) {
      ADD_FAILURE() << r.Describe();
      return "";
    }
    const std::string event = r.Json().value("event_id", "");
    for (int i = 0; i < 500; ++i) {
      json e = client().Get("/v1/event/" + event + "/", key).Json();
      if (e.value("status", "") == "SUCCEEDED" && !e["results"].empty()) {
        return e["results"][0].value("id", "");
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    ADD_FAILURE() << "event " << event << " did not succeed";
    return "";
  }

  size_t CountOf(const std::string& user, const Headers& key) {
    json page = client().Post("/v3/memories/", json{{"filters", {{"user_id", user}}}}, key).Json();
    return page.value("count", size_t{0});
  }
};

// Each refusal: status, the field its detail names, and nothing stored.
TEST_F(Mem0Test, BadInputIsRefusedNamingTheFieldAndStoresNothing) {
  const std::string user = UniqueId("mem0-bad");
  struct Case {
    const char* path;
    json body;
    int status;
    const char* names;
  };
  const json msg = json::array({json{{"role", "user"}, {"content", "I like green tea"}}});
  const std::vector<Case> cases = {
      {"/v3/memories/add/", json{{"messages", msg}}, 400, "user_id"},
      {"/v3/memories/add/", json{{"messages", msg}, {"user_id", 7}}, 400, "user_id"},
      {"/v3/memories/add/", json{{"messages", 5}, {"user_id", user}}, 400, "messages"},
      {"/v3/memories/add/", json{{"messages", msg}, {"user_id", user}, {"metadata", "x"}}, 400,
       "metadata"},
      {"/v3/memories/add/", json{{"messages", msg}, {"user_id", user}, {"expiration_date", "soon"}},
       400, "expiration_date"},
      {"/v3/memories/add/",
       json{{"messages", msg}, {"user_id", user}, {"custom_instructions", "x"}}, 400,
       "custom_instructions"},
      {"/v3/memories/add/", json{{"messages", msg}, {"user_id", user}, {"enable_graph", true}}, 501,
       "graph memory"},
      {"/v1/memories/", json{{"messages", msg}, {"user_id", user}, {"async_mode", "no"}}, 400,
       "async_mode"},
      {"/v3/memories/search/", json{{"query", "tea"}}, 400, "user_id"},
      {"/v3/memories/search/",
       json{{"query", "tea"}, {"filters", {{"user_id", user}}}, {"top_k", 0}}, 400, "top_k"},
      {"/v3/memories/search/", json{{"query", "tea"}, {"filters", {{"colour", "red"}}}}, 400,
       "filters.colour"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(std::string(c.path) + " " + c.body.dump());
    HttpResponse r = client().Post(c.path, c.body, kAdmin);
    EXPECT_EQ(r.status, c.status) << r.Describe();
    EXPECT_NE(r.Json().value("detail", "").find(c.names), std::string::npos) << r.Describe();
  }
  HttpResponse not_json =
      client().Post("/v3/memories/add/", std::string_view("{\"messages\": ["), kAdmin);
  EXPECT_EQ(not_json.status, 400) << not_json.Describe();
  EXPECT_EQ(CountOf(user, kAdmin), 0u);
  json events = client().Get("/v1/events/", kAdmin).Json();
  for (const json& e : events["results"]) {
    EXPECT_EQ(e["results"].dump().find(user), std::string::npos);
  }
}

TEST_F(Mem0Test, KeysStayInTheirWorkspaces) {
  const std::string user = UniqueId("mem0-iso");
  const std::string id = AddVerbatim(user, "Team A's user likes oolong", kTeamA);
  ASSERT_FALSE(id.empty());
  // The key's only workspace is its project: ping says so, and team B sees nothing of it.
  EXPECT_EQ(client().Get("/v1/ping/", kTeamA).Json().value("project_id", ""), "ws-a");
  EXPECT_EQ(CountOf(user, kTeamA), 1u);
  EXPECT_EQ(CountOf(user, kTeamB), 0u);
  EXPECT_EQ(client().Get("/v1/memories/" + id + "/", kTeamB).status, 404);
  EXPECT_EQ(client().Delete("/v1/memories/" + id + "/", kTeamB).status, 404);
  // Naming the other project is refused, not served.
  EXPECT_EQ(client().Get("/v1/memories/" + id + "/?project_id=ws-a", kTeamB).status, 403);
  HttpResponse search = client().Post(
      "/v3/memories/search/",
      json{{"query", "oolong"}, {"filters", {{"user_id", user}}}, {"project_id", "ws-a"}}, kTeamB);
  EXPECT_EQ(search.status, 403) << search.Describe();
  // The admin key reaches ws-a by naming it; its own default workspace does not have it.
  EXPECT_EQ(client().Get("/v1/memories/" + id + "/?project_id=ws-a", kAdmin).status, 200);
  EXPECT_EQ(client().Get("/v1/memories/" + id + "/", kAdmin).status, 404);
  EXPECT_EQ(client().Get("/v1/ping/", {{"Authorization", "Token wrong"}}).status, 401);
  EXPECT_EQ(client().Get("/v1/ping/").status, 401);
  // Entities list only the key's workspace.
  EXPECT_EQ(client().Get("/v1/entities/", kTeamB).Json().dump().find(user), std::string::npos);
  EXPECT_NE(client().Get("/v1/entities/", kTeamA).Json().dump().find(user), std::string::npos);
}

TEST_F(Mem0Test, UnsupportedFeaturesAre501NamingThem) {
  struct Case {
    const char* method;
    const char* path;
    const char* feature;
  };
  for (const Case& c : std::vector<Case>{
           {"GET", "/api/v1/webhooks/projects/default/", "webhooks"},
           {"POST", "/v1/exports/", "memory exports"},
           {"GET", "/v2/profiles/settings/", "user profiles"},
           {"PATCH", "/api/v1/orgs/organizations/engram/projects/default/", "project settings"},
       }) {
    SCOPED_TRACE(c.path);
    HttpResponse r = client().Request(c.method, c.path, "{}", kAdmin);
    EXPECT_EQ(r.status, 501) << r.Describe();
    EXPECT_NE(r.Json().value("detail", "").find(c.feature), std::string::npos) << r.Describe();
    // Still behind the key.
    EXPECT_EQ(client().Request(c.method, c.path, "{}", {}).status, 401);
  }
  EXPECT_EQ(client().Get("/v1/memories/search/", kAdmin).status, 405);
}

TEST_F(Mem0Test, MemoriesCrossBetweenTheMem0AndV4Apis) {
  const std::string user = UniqueId("mem0-cross");
  const std::string word = UniqueWord();
  const std::string id = AddVerbatim(user, "The password hint is " + word, kAdmin);
  ASSERT_FALSE(id.empty());
  const std::string v4 = "/v4/openapi/workspaces/default/memory/agentic-memory/memories";
  json hits =
      client().Post(v4 + "/search", json{{"query", word}, {"user_id", user}}, kAdmin).Json();
  ASSERT_TRUE(hits.contains("results")) << hits.dump();
  ASSERT_FALSE(hits["results"].empty());
  EXPECT_EQ(hits["results"][0].value("id", ""), id);

  // The other way: a V4 add is found by mem0's search and get.
  const std::string word2 = UniqueWord();
  HttpResponse add = client().Post(
      v4 + "/add",
      json{{"messages", json::array({json{{"role", "user"}, {"content", "Code " + word2}}})},
           {"user_id", user},
           {"infer", false}},
      kAdmin);
  ASSERT_EQ(add.status, 200) << add.Describe();
  json found;
  for (int i = 0; i < 300; ++i) {
    found = client()
                .Post("/v3/memories/search/",
                      json{{"query", word2}, {"filters", {{"user_id", user}}}}, kAdmin)
                .Json();
    if (found.contains("results") && found["results"].size() == 2) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  ASSERT_TRUE(found.contains("results")) << found.dump();
  ASSERT_FALSE(found["results"].empty());
  const std::string v4_id = found["results"][0].value("id", "");
  EXPECT_NE(found["results"][0].value("memory", "").find(word2), std::string::npos);
  EXPECT_EQ(client().Get("/v1/memories/" + v4_id + "/", kAdmin).Json().value("user_id", ""), user);
}

// Adds answered PENDING are in the store: killed with their events unrun, the server runs them
// after the restart.
TEST(Mem0DurabilityTest, AcknowledgedAddsSurviveKill9) {
  ENGRAM_REQUIRE_BINARY();
  ServerOptions options = Mem0Options();
  ServerProcess server(options);
  ASSERT_TRUE(server.Start());
  HttpClient client(server.BaseUrl());
  const std::string user = UniqueId("mem0-kill");
  std::vector<std::string> words, events;
  for (int i = 0; i < 40; ++i) {
    words.push_back(UniqueWord());
    HttpResponse r =
        client.Post("/v3/memories/add/",
                    json{{"messages", "Entry " + std::to_string(i) + " says " + words.back()},
                         {"user_id", user},
                         {"infer", false}},
                    kAdmin);
    ASSERT_EQ(r.status, 200) << r.Describe();
    events.push_back(r.Json().value("event_id", ""));
  }
  server.Kill();
  ASSERT_TRUE(server.Start()) << "restart after kill -9 failed";
  client.set_base_url(server.BaseUrl());
  for (const std::string& e : events) {
    std::string status;
    for (int i = 0; i < 1000 && status != "SUCCEEDED"; ++i) {
      status = client.Get("/v1/event/" + e + "/", kAdmin).Json().value("status", "");
      if (status != "SUCCEEDED") std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    EXPECT_EQ(status, "SUCCEEDED") << e;
  }
  json page =
      client.Post("/v3/memories/?page_size=100", json{{"filters", {{"user_id", user}}}}, kAdmin)
          .Json();
  EXPECT_EQ(page.value("count", 0), 40) << page.dump().substr(0, 300);
}

}  // namespace
}  // namespace engram::testing
