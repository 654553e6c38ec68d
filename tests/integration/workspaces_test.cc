// GET /workspaces (docs/api/README.md, operator endpoints): what each workspace holds, counted
// from the store; a key limited to some workspaces sees exactly those, an empty one included; a
// key for every workspace sees each one with data; bad paging is a 400 naming the parameter.
#include "memory_client.h"
#include "test_util.h"

namespace engram::testing {
namespace {

using nlohmann::json;

const Headers kAdmin = {{"Authorization", "Bearer admin"}};
const Headers kTeam = {{"Authorization", "Bearer team"}};

// Adds verbatim memories (infer: false) with the admin key and waits for the event to end.
void AddVerbatim(const HttpClient& client, const std::string& workspace, const std::string& user,
                 const std::vector<std::string>& texts) {
  json messages = json::array();
  for (const auto& t : texts) messages.push_back({{"role", "user"}, {"content", t}});
  json event = AddMemoriesAndWait(
      client, {{"messages", messages}, {"user_id", user}, {"infer", false}}, workspace, kAdmin);
  ASSERT_EQ(event.value("status", ""), "SUCCEEDED") << event.dump();
}

json Find(const json& list, const std::string& workspace) {
  for (const auto& w : list["workspaces"]) {
    if (w["workspace"] == workspace) return w;
  }
  return json();
}

TEST(WorkspacesTest, CountsWhatEachWorkspaceHoldsForTheKeysWorkspaces) {
  ENGRAM_REQUIRE_BINARY();
  ServerOptions o;
  o.extra_args = {"--api-key", "admin", "--api-key", "team:alpha:gamma"};
  ServerProcess server(o);
  ASSERT_TRUE(server.Start());
  HttpClient client(server.BaseUrl());

  AddVerbatim(client, "alpha", "ann", {"likes green tea", "works nights"});
  AddVerbatim(client, "alpha", "bob", {"owns a bike"});
  AddVerbatim(client, "beta", "cid", {"speaks Welsh"});

  HttpResponse admin = client.Get("/workspaces", kAdmin);
  ASSERT_EQ(admin.status, 200) << admin.Describe();
  json all = admin.Json();
  EXPECT_EQ(all["total"], 2);
  ASSERT_EQ(all["workspaces"].size(), 2u) << all.dump();
  EXPECT_EQ(all["workspaces"][0]["workspace"], "alpha");
  EXPECT_EQ(all["workspaces"][1]["workspace"], "beta");
  json alpha = Find(all, "alpha");
  EXPECT_EQ(alpha["memories"], (json{{"count", 3}, {"users", 2}})) << alpha.dump();
  EXPECT_EQ(alpha["memory_events"], (json{{"count", 2}, {"unfinished", 0}}));
  EXPECT_EQ(alpha["skills"]["count"], 0);
  EXPECT_EQ(alpha["knowledge_bases"]["documents"], 0);
  EXPECT_EQ(alpha["leaderboard"]["messages"], 0);
  EXPECT_EQ(Find(all, "beta")["memories"]["count"], 1);

  // The limited key: its two workspaces, gamma with nothing in it; beta is not named.
  HttpResponse team = client.Get("/workspaces", kTeam);
  ASSERT_EQ(team.status, 200) << team.Describe();
  json mine = team.Json();
  EXPECT_EQ(mine["total"], 2);
  EXPECT_EQ(Find(mine, "alpha")["memories"]["count"], 3);
  EXPECT_EQ(Find(mine, "gamma")["memories"]["count"], 0);
  EXPECT_TRUE(Find(mine, "beta").is_null()) << mine.dump();
  EXPECT_EQ(team.body.find("beta"), std::string::npos);

  // Pages.
  json second = client.Get("/workspaces?page_size=1&page_number=2", kAdmin).Json();
  ASSERT_EQ(second["workspaces"].size(), 1u) << second.dump();
  EXPECT_EQ(second["workspaces"][0]["workspace"], "beta");
  EXPECT_EQ(second["total"], 2);
  EXPECT_EQ(client.Get("/workspaces?page_number=9", kAdmin).Json()["workspaces"].size(), 0u);

  // Refusals.
  EXPECT_TRUE(IsError(client.Get("/workspaces"), 401, "InvalidApiKey"));
  EXPECT_TRUE(
      IsError(client.Get("/workspaces", {{"Authorization", "Bearer nope"}}), 401, "InvalidApiKey"));
  for (const char* query : {"?page_size=0", "?page_size=101", "?page_number=x", "?workspace=a"}) {
    SCOPED_TRACE(query);
    HttpResponse bad = client.Get(std::string("/workspaces") + query, kAdmin);
    EXPECT_TRUE(IsError(bad, 400, "InvalidParameter")) << bad.Describe();
    const std::string named = std::string(query).substr(1, std::string(query).find('=') - 1);
    EXPECT_NE(bad.Json().value("message", "").find(named), std::string::npos) << bad.body;
  }
}

}  // namespace
}  // namespace engram::testing
