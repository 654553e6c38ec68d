// The Agentic Memory V4 memory endpoints (docs/api/README.md section 1) against a real server:
// add → event → search / get / update / delete / list / history, filters, isolation, duplicates,
// expiry, and events that survive kill -9.
#include <atomic>
#include <chrono>
#include <cmath>
#include <set>
#include <thread>

#include "memory_client.h"
#include "test_util.h"

namespace engram::testing {
namespace {

using nlohmann::json;
using namespace std::chrono_literals;

bool HasText(const json& results, std::string_view needle) {
  for (const auto& r : results) {
    if (r.value("memory", "").find(needle) != std::string::npos) return true;
  }
  return false;
}

class MemoryApiTest : public SharedServerTest {};

TEST_F(MemoryApiTest, VerbatimAddIsSearchableAndRendersEveryField) {
  const std::string user = UniqueId("u");
  const std::string word = UniqueWord();
  json event =
      AddMemoriesAndWait(client(), {{"messages", "The build server password rotates every " + word},
                                    {"user_id", user},
                                    {"agent_id", "agent-1"},
                                    {"metadata", {{"topic", "ops"}, {"priority", 3}}},
                                    {"infer", false}});
  ASSERT_EQ(event.value("status", ""), "SUCCEEDED") << event.dump();
  ASSERT_EQ(event["results"].size(), 1u) << event.dump();
  ASSERT_EQ(event["events"].size(), 1u);
  EXPECT_EQ(event["events"][0]["event"], "ADD");
  EXPECT_EQ(event["error_message"], "");
  EXPECT_TRUE(HasFieldTypes(event, {{"id", JsonType::kString},
                                    {"status", JsonType::kString},
                                    {"results", JsonType::kArray},
                                    {"events", JsonType::kArray},
                                    {"error_message", JsonType::kString},
                                    {"created_at", JsonType::kString},
                                    {"updated_at", JsonType::kString}}));
  for (const char* key : {"id", "created_at", "updated_at"})
    EXPECT_TRUE(event.contains(key)) << key;
  const std::string id = event["results"][0];
  EXPECT_EQ(id.rfind("m-", 0), 0u);

  json results = SearchMemories(
      client(), {{"query", "when does the password rotate " + word}, {"user_id", user}});
  ASSERT_EQ(results.size(), 1u) << results.dump();
  const json& hit = results[0];
  EXPECT_EQ(hit["id"], id);
  EXPECT_EQ(hit["user_id"], user);
  EXPECT_EQ(hit["agent_id"], "agent-1");
  EXPECT_EQ(hit["run_id"], "");
  EXPECT_TRUE(HasFieldTypes(hit, {{"id", JsonType::kString},
                                  {"memory", JsonType::kString},
                                  {"score", JsonType::kNumber},
                                  {"user_id", JsonType::kString},
                                  {"agent_id", JsonType::kString},
                                  {"run_id", JsonType::kString},
                                  {"metadata", JsonType::kObject},
                                  {"created_at", JsonType::kString},
                                  {"updated_at", JsonType::kString}}));
  EXPECT_EQ(hit["metadata"]["topic"], "ops");
  EXPECT_GT(hit["score"].get<double>(), 0.0);
  EXPECT_LE(hit["score"].get<double>(), 1.0);
  EXPECT_EQ(hit["created_at"].get<std::string>().size(), 27u) << hit["created_at"];

  HttpResponse got = client().Get(MemoryPrefix() + "/memories/" + id);
  ASSERT_EQ(got.status, 200) << got.Describe();
  EXPECT_EQ(got.Json()["memory"], "The build server password rotates every " + word);
}

TEST_F(MemoryApiTest, AnExplainedSearchShowsEachRetrieversPart) {
  const std::string user = UniqueId("u");
  const std::string word = UniqueWord();
  json event = AddMemoriesAndWait(
      client(), {{"messages",
                  {{{"role", "user"}, {"content", "My locker code is " + word}},
                   {{"role", "user"}, {"content", "I walk the dog every morning"}}}},
                 {"user_id", user},
                 {"infer", false}});
  ASSERT_EQ(event.value("status", ""), "SUCCEEDED") << event.dump();
  const json query = {{"query", "what is my locker code " + word}, {"user_id", user}};
  json plain = SearchMemories(client(), query);
  ASSERT_FALSE(plain.empty());
  for (const json& hit : plain) EXPECT_FALSE(hit.contains("explain")) << "only when asked";

  json explained_query = query;
  explained_query["explain"] = true;
  json explained = SearchMemories(client(), explained_query);
  ASSERT_EQ(explained.size(), plain.size());
  for (size_t i = 0; i < plain.size(); ++i) {
    EXPECT_EQ(explained[i]["id"], plain[i]["id"]) << "explaining does not change the ranking";
    EXPECT_EQ(explained[i]["score"], plain[i]["score"]);
  }
  const json& top = explained[0];
  EXPECT_NE(top["memory"].get<std::string>().find(word), std::string::npos) << top.dump();
  ASSERT_TRUE(top["explain"]["fusion"].is_object()) << top.dump();
  const json& fusion = top["explain"]["fusion"];
  EXPECT_EQ(fusion["method"], "zscore");
  ASSERT_TRUE(fusion["bm25"]["score"].is_number()) << "the unique word is a BM25 match";
  EXPECT_GT(fusion["bm25"]["score"].get<double>(), 0.0);
  EXPECT_GT(fusion["bm25"]["part"].get<double>(), 0.0);
  EXPECT_TRUE(fusion["vector"].contains("similarity"));
  EXPECT_TRUE(fusion["vector"]["part"].is_number());
  EXPECT_TRUE(top["explain"]["ranked_score"].is_number());
  EXPECT_FALSE(top["explain"].contains("rank_before_rerank")) << "no reranker configured";
  // The parts are the fusion's arithmetic: logistic of their sum, times any factor.
  const double sum =
      fusion["bm25"]["part"].get<double>() + fusion["vector"]["part"].get<double>() +
      (fusion.contains("date_prior") ? fusion["date_prior"]["part"].get<double>() : 0);
  const double factor = fusion.value("factor", 1.0);
  EXPECT_NEAR(factor / (1 + std::exp(-sum)), fusion["score"].get<double>(), 1e-4) << top.dump();
}

TEST_F(MemoryApiTest, RuleBasedExtractionWritesThirdPersonFactsAndSkipsDuplicates) {
  const std::string user = UniqueId("u");
  json messages =
      json::array({{{"role", "user"}, {"content", "Hi! I really love hiking in the Alps."}},
                   {{"role", "assistant"}, {"content", "That sounds wonderful."}}});
  json first = AddMemoriesAndWait(client(), {{"messages", messages}, {"user_id", user}});
  ASSERT_EQ(first.value("status", ""), "SUCCEEDED") << first.dump();
  ASSERT_FALSE(first["results"].empty()) << first.dump();
  EXPECT_EQ(first["events"][0]["event"], "ADD");
  const std::string text = first["events"][0]["memory"];
  EXPECT_EQ(text.rfind("User", 0), 0u) << text;

  // The same conversation again: nothing new is stored.
  json second = AddMemoriesAndWait(client(), {{"messages", messages}, {"user_id", user}});
  ASSERT_EQ(second.value("status", ""), "SUCCEEDED") << second.dump();
  for (const auto& e : second["events"]) EXPECT_EQ(e["event"], "NONE") << second.dump();
  HttpResponse list = client().Get(MemoryPrefix() + "/memories?user_id=" + user);
  ASSERT_EQ(list.status, 200) << list.Describe();
  EXPECT_EQ(list.Json()["total"], first["results"].size()) << list.body;

  json results = SearchMemories(
      client(), {{"query", "what outdoor activity does the user enjoy?"}, {"user_id", user}});
  EXPECT_TRUE(HasText(results, "hiking")) << results.dump();
}

TEST_F(MemoryApiTest, ConcurrentIdenticalAddsStoreOnce) {
  const std::string user = UniqueId("u");
  const std::string word = UniqueWord();
  json body = {{"messages", "Parking spot number " + word + " is reserved for me"},
               {"user_id", user},
               {"infer", false}};
  std::vector<std::string> events(6);
  std::vector<std::thread> threads;
  for (size_t i = 0; i < events.size(); ++i) {
    threads.emplace_back([&, i] {
      HttpResponse r = client().Post(MemoryPrefix() + "/memories/add", body);
      events[i] = r.Json().value("event_id", "");
    });
  }
  for (auto& t : threads) t.join();
  int adds = 0;
  for (const auto& id : events) {
    ASSERT_FALSE(id.empty());
    json e = WaitMemoryEvent(client(), id);
    ASSERT_EQ(e.value("status", ""), "SUCCEEDED") << e.dump();
    for (const auto& item : e["events"]) adds += item["event"] == "ADD" ? 1 : 0;
  }
  EXPECT_EQ(adds, 1);
  HttpResponse list = client().Get(MemoryPrefix() + "/memories?user_id=" + user);
  EXPECT_EQ(list.Json()["total"], 1) << list.body;
}

// Events of one scope run in the order they were accepted, even with several workers: a later
// contradiction updates the earlier fact rather than being overwritten by it.
TEST_F(MemoryApiTest, EventsOfOneScopeRunInOrder) {
  for (int round = 0; round < 5; ++round) {
    const std::string user = UniqueId("u");
    std::vector<std::string> ids;
    for (const char* text : {"I live in Berlin.", "I moved to Lisbon last year."}) {
      HttpResponse r = client().Post(
          MemoryPrefix() + "/memories/add",
          json{{"messages", text}, {"user_id", user}, {"timestamp", "2024-05-08T10:00:00Z"}});
      ASSERT_EQ(r.status, 200) << r.Describe();
      ids.push_back(r.Json()["event_id"]);
    }
    std::string events;
    for (const auto& id : ids) {
      json e = WaitMemoryEvent(client(), id);
      ASSERT_EQ(e.value("status", ""), "SUCCEEDED");
      events += e.dump() + "\n";
    }
    json list = client().Get(MemoryPrefix() + "/memories?user_id=" + user).Json();
    ASSERT_EQ(list["total"], 1) << list.dump();
    EXPECT_NE(list["results"][0]["memory"].get<std::string>().find("Lisbon"), std::string::npos)
        << list.dump() << "\n"
        << events;
  }
}

TEST_F(MemoryApiTest, EventListPagesTheWorkspacesEventsNewestFirst) {
  const std::string ws = UniqueWorkspace("events");
  std::vector<std::string> ids;
  for (const char* text : {"I live in Berlin.", "I keep bees.", "I play the oboe."}) {
    json event = AddMemoriesAndWait(client(), {{"messages", text}, {"user_id", "u"}}, ws);
    ASSERT_EQ(event.value("status", ""), "SUCCEEDED") << event.dump();
    ids.push_back(event["id"]);
  }
  json list = client().Get(MemoryPrefix(ws) + "/events").Json();
  ASSERT_EQ(list["total"], 3) << list.dump();
  EXPECT_EQ(list["page_number"], 1);
  EXPECT_EQ(list["page_size"], 20);
  ASSERT_EQ(list["results"].size(), 3u);
  EXPECT_EQ(list["results"][0]["id"], ids[2]);
  EXPECT_EQ(list["results"][2]["id"], ids[0]);
  // Each as GET …/events/{id} renders it.
  EXPECT_EQ(list["results"][1], client().Get(MemoryPrefix(ws) + "/events/" + ids[1]).Json());
  json second = client().Get(MemoryPrefix(ws) + "/events?page_size=2&page_number=2").Json();
  ASSERT_EQ(second["results"].size(), 1u) << second.dump();
  EXPECT_EQ(second["results"][0]["id"], ids[0]);
  EXPECT_EQ(client().Get(MemoryPrefix(UniqueWorkspace("none")) + "/events").Json()["total"], 0);
  EXPECT_TRUE(IsError(client().Get(MemoryPrefix(ws) + "/events?page_size=101"), 400,
                      "InvalidParameter", "page_size"));
  EXPECT_TRUE(IsError(client().Get(MemoryPrefix(ws) + "/events?page_number=0"), 400,
                      "InvalidParameter", "page_number"));
  EXPECT_TRUE(IsError(client().Get(MemoryPrefix(ws) + "/events?status=FAILED"), 400,
                      "InvalidParameter", "status"));
}

TEST_F(MemoryApiTest, UpdateDeleteAndHistory) {
  const std::string user = UniqueId("u");
  const std::string old_word = UniqueWord(), new_word = UniqueWord();
  json event = AddMemoriesAndWait(client(), {{"messages", "Favourite tea is " + old_word},
                                             {"user_id", user},
                                             {"metadata", {{"a", 1}, {"b", "x"}}},
                                             {"infer", false}});
  const std::string id = event["results"][0];

  HttpResponse put = client().Request(
      "PUT", MemoryPrefix() + "/memories/" + id,
      json{{"text", "Favourite tea is " + new_word}, {"metadata", {{"b", "y"}, {"c", true}}}}
          .dump(),
      {{"Content-Type", "application/json"}});
  ASSERT_EQ(put.status, 200) << put.Describe();
  json updated = put.Json();
  EXPECT_EQ(updated["text"], "Favourite tea is " + new_word);
  EXPECT_EQ(updated["metadata"], json({{"a", 1}, {"b", "y"}, {"c", true}}));

  // Re-indexed at once: the new word is found, the old one is not.
  EXPECT_EQ(SearchMemories(client(), {{"query", new_word}, {"user_id", user}}).size(), 1u);
  EXPECT_TRUE(
      SearchMemories(client(), {{"query", old_word}, {"user_id", user}, {"threshold", 0.0}})
          .empty() ||
      !HasText(SearchMemories(client(), {{"query", old_word}, {"user_id", user}}), old_word));

  HttpResponse del = client().Delete(MemoryPrefix() + "/memories/" + id);
  ASSERT_EQ(del.status, 200) << del.Describe();
  EXPECT_EQ(del.Json()["message"], "Memory " + id + " deleted successfully");
  EXPECT_TRUE(SearchMemories(client(), {{"query", new_word}, {"user_id", user}}).empty());
  EXPECT_TRUE(IsError(client().Get(MemoryPrefix() + "/memories/" + id), 404, "NotFound"));
  EXPECT_TRUE(IsError(client().Delete(MemoryPrefix() + "/memories/" + id), 404, "NotFound"));

  HttpResponse history = client().Get(MemoryPrefix() + "/memories/" + id + "/history");
  ASSERT_EQ(history.status, 200) << history.Describe();
  json h = history.Json()["results"];
  ASSERT_EQ(h.size(), 3u) << h.dump();
  EXPECT_EQ(h[0]["event"], "ADD");
  EXPECT_TRUE(h[0]["old_memory"].is_null());
  EXPECT_EQ(h[1]["event"], "UPDATE");
  EXPECT_EQ(h[1]["old_memory"], "Favourite tea is " + old_word);
  EXPECT_EQ(h[1]["new_memory"], "Favourite tea is " + new_word);
  EXPECT_EQ(h[2]["event"], "DELETE");
  EXPECT_EQ(h[0]["event_id"], event["id"]);
}

TEST_F(MemoryApiTest, FiltersApplyInsideRetrieval) {
  const std::string user = UniqueId("u");
  const std::string word = UniqueWord();
  // 30 memories share the word; only one has metadata kind=rare.
  for (int i = 0; i < 30; ++i) {
    json body = {{"messages", "Note " + std::to_string(i) + " about " + word},
                 {"user_id", user},
                 {"run_id", i % 2 == 0 ? "even" : "odd"},
                 {"metadata", {{"kind", i == 17 ? "rare" : "common"}, {"n", i}}},
                 {"infer", false}};
    ASSERT_EQ(AddMemoriesAndWait(client(), body).value("status", ""), "SUCCEEDED");
  }
  json rare = SearchMemories(
      client(),
      {{"query", word}, {"user_id", user}, {"top_k", 1}, {"filters", {{"metadata.kind", "rare"}}}});
  ASSERT_EQ(rare.size(), 1u) << rare.dump();
  EXPECT_EQ(rare[0]["metadata"]["n"], 17);

  json ranged = SearchMemories(
      client(), {{"query", word},
                 {"top_k", 100},
                 {"filters",
                  {{"AND", json::array({{{"user_id", user}},
                                        {{"run_id", "even"}},
                                        {{"metadata.n", {{"gte", 10}}}},
                                        {{"NOT", {{"metadata.n", {{"in", {10, 12}}}}}}}})}}}});
  std::set<int> ns;
  for (const auto& r : ranged) ns.insert(r["metadata"]["n"].get<int>());
  EXPECT_EQ(ns, (std::set<int>{14, 16, 18, 20, 22, 24, 26, 28})) << ranged.dump();

  json either = SearchMemories(
      client(),
      {{"query", word},
       {"top_k", 100},
       {"filters",
        {{"OR", json::array({{{"user_id", user}}, {{"user_id", UniqueId("nobody")}}})}}}});
  EXPECT_EQ(either.size(), 30u);
}

TEST_F(MemoryApiTest, SearchMustBeConfinedToAScope) {
  HttpResponse r = client().Post(MemoryPrefix() + "/memories/search", json{{"query", "anything"}});
  EXPECT_TRUE(IsError(r, 400, "InvalidParameter", "user_id"));
  r = client().Post(MemoryPrefix() + "/memories/search",
                    json{{"query", "anything"}, {"filters", {{"metadata.x", 1}}}});
  EXPECT_TRUE(IsError(r, 400, "InvalidParameter", "user_id"));
}

TEST_F(MemoryApiTest, BadRequestsGetPreciseErrors) {
  struct Case {
    std::string path;
    json body;
    std::string field;
  };
  const std::string add = MemoryPrefix() + "/memories/add";
  const std::string search = MemoryPrefix() + "/memories/search";
  const std::vector<Case> cases = {
      {add, json::object(), "messages"},
      {add, {{"messages", "hi"}}, "user_id"},
      {add, {{"messages", 5}, {"user_id", "u"}}, "messages"},
      {add, {{"messages", json::array()}, {"user_id", "u"}}, "messages"},
      {add, {{"messages", {{{"role", "robot"}, {"content", "x"}}}}, {"user_id", "u"}}, "role"},
      {add, {{"messages", {{{"role", "user"}}}}, {"user_id", "u"}}, "content"},
      {add, {{"messages", "x"}, {"user_id", 7}}, "user_id"},
      {add, {{"messages", "x"}, {"user_id", std::string(300, 'u')}}, "user_id"},
      {add, {{"messages", "x"}, {"user_id", "u"}, {"metadata", "x"}}, "metadata"},
      {add, {{"messages", "x"}, {"user_id", "u"}, {"infer", "yes"}}, "infer"},
      {add, {{"messages", "x"}, {"user_id", "u"}, {"timestamp", "yesterday"}}, "timestamp"},
      {add,
       {{"messages", "x"}, {"user_id", "u"}, {"expiration_date", "2024-02-30"}},
       "expiration_date"},
      {add, {{"messages", "x"}, {"user_id", "u"}, {"expiration_date", "soon"}}, "expiration_date"},
      {search, {{"user_id", "u"}}, "query"},
      {search, {{"query", ""}, {"user_id", "u"}}, "query"},
      {search, {{"query", "x"}, {"user_id", "u"}, {"top_k", 0}}, "top_k"},
      {search, {{"query", "x"}, {"user_id", "u"}, {"top_k", 5000}}, "top_k"},
      {search, {{"query", "x"}, {"user_id", "u"}, {"threshold", 2}}, "threshold"},
      {search, {{"query", "x"}, {"user_id", "u"}, {"filters", {{"colour", "red"}}}}, "colour"},
      {search,
       {{"query", "x"}, {"user_id", "u"}, {"filters", {{"user_id", {{"near", "a"}}}}}},
       "near"},
      {search, {{"query", "x"}, {"user_id", "u"}, {"filters", {{"AND", "x"}}}}, "AND"},
      {search,
       {{"query", "x"}, {"user_id", "u"}, {"filters", {{"created_at", {{"gt", "not a date"}}}}}},
       "created_at"},
      {search, {{"query", "x"}, {"user_id", "u"}, {"filters", 3}}, "filters"},
      {search, {{"query", "x"}, {"user_id", "u"}, {"explain", "yes"}}, "explain"},
  };
  for (const auto& c : cases) {
    HttpResponse r = client().Post(c.path, c.body);
    EXPECT_TRUE(IsError(r, 400, "InvalidParameter", c.field)) << c.body.dump();
  }
  EXPECT_TRUE(IsError(client().Post(add, std::string_view("{not json")), 400, "InvalidParameter"));
  HttpResponse put = client().Request("PUT", MemoryPrefix() + "/memories/m-nothing", "{}",
                                      {{"Content-Type", "application/json"}});
  EXPECT_TRUE(IsError(put, 400, "InvalidParameter", "text"));
  put = client().Request("PUT", MemoryPrefix() + "/memories/m-nothing", R"({"text":"x"})",
                         {{"Content-Type", "application/json"}});
  EXPECT_TRUE(IsError(put, 404, "NotFound"));
  EXPECT_TRUE(IsError(client().Get(MemoryPrefix() + "/events/me-nothing"), 404, "NotFound"));
  EXPECT_TRUE(
      IsError(client().Get(MemoryPrefix() + "/memories/m-nothing/history"), 404, "NotFound"));
  EXPECT_TRUE(
      IsError(client().Get(MemoryPrefix() + "/memories"), 400, "InvalidParameter", "user_id"));
  EXPECT_TRUE(IsError(client().Get(MemoryPrefix() + "/memories?user_id=u&page_size=0"), 400,
                      "InvalidParameter", "page_size"));
  EXPECT_TRUE(IsError(client().Get(MemoryPrefix() + "/memories?user_id=u&colour=red"), 400,
                      "InvalidParameter", "colour"));
  EXPECT_TRUE(IsError(client().Post("/v4/openapi/workspaces/default/memory/other/memories/add",
                                    json{{"messages", "x"}, {"user_id", "u"}}),
                      400, "ServiceIdNotExist"));
}

TEST_F(MemoryApiTest, OtherMethodsOnActionPathsAre405) {
  // "memories/add" and "memories/search" name actions, not memories called "add" or "search".
  for (const char* action : {"add", "search"}) {
    SCOPED_TRACE(action);
    const std::string path = MemoryPrefix() + "/memories/" + action;
    EXPECT_TRUE(IsError(client().Get(path), 405, "MethodNotAllowed"));
    EXPECT_TRUE(IsError(client().Delete(path), 405, "MethodNotAllowed"));
    EXPECT_TRUE(IsError(
        client().Request("PUT", path, R"({"text":"x"})", {{"Content-Type", "application/json"}}),
        405, "MethodNotAllowed"));
  }
  // Skills' action paths likewise.
  const std::string p3 = "/v3/openapi/workspaces/default/memory/agentic-memory/skills/";
  for (const char* action : {"add", "search", "import"}) {
    SCOPED_TRACE(action);
    EXPECT_TRUE(IsError(client().Get(p3 + action), 405, "MethodNotAllowed"));
  }
}

TEST_F(MemoryApiTest, WorkspacesAndUsersAreIsolated) {
  const std::string user = UniqueId("u");
  const std::string other_user = UniqueId("u");
  const std::string word = UniqueWord();
  json event = AddMemoriesAndWait(
      client(), {{"messages", "Secret " + word}, {"user_id", user}, {"infer", false}}, "team-a");
  const std::string id = event["results"][0];
  EXPECT_EQ(SearchMemories(client(), {{"query", word}, {"user_id", user}}, "team-a").size(), 1u);
  EXPECT_TRUE(SearchMemories(client(), {{"query", word}, {"user_id", user}}, "team-b").empty());
  EXPECT_TRUE(
      SearchMemories(client(), {{"query", word}, {"user_id", other_user}}, "team-a").empty());
  EXPECT_TRUE(IsError(client().Get(MemoryPrefix("team-b") + "/memories/" + id), 404, "NotFound"));
  EXPECT_TRUE(
      IsError(client().Delete(MemoryPrefix("team-b") + "/memories/" + id), 404, "NotFound"));
  EXPECT_TRUE(
      IsError(client().Get(MemoryPrefix("team-b") + "/events/" + event["id"].get<std::string>()),
              404, "NotFound"));
  EXPECT_EQ(client().Get(MemoryPrefix("team-a") + "/memories/" + id).status, 200);
}

TEST_F(MemoryApiTest, ListPagesNewestFirstAndDeleteScope) {
  const std::string user = UniqueId("u");
  for (int i = 0; i < 5; ++i) {
    AddMemoriesAndWait(client(),
                       {{"messages", "Item number " + std::to_string(i) + " " + UniqueWord()},
                        {"user_id", user},
                        {"infer", false}});
  }
  HttpResponse page =
      client().Get(MemoryPrefix() + "/memories?user_id=" + user + "&page_number=2&page_size=2");
  ASSERT_EQ(page.status, 200) << page.Describe();
  json j = page.Json();
  EXPECT_EQ(j["total"], 5);
  ASSERT_EQ(j["results"].size(), 2u);
  EXPECT_EQ(j["results"][0]["memory"].get<std::string>().rfind("Item number 2", 0), 0u) << j.dump();
  EXPECT_EQ(j["results"][1]["memory"].get<std::string>().rfind("Item number 1", 0), 0u);

  HttpResponse del = client().Delete(MemoryPrefix() + "/memories?user_id=" + user);
  ASSERT_EQ(del.status, 200) << del.Describe();
  EXPECT_EQ(del.Json()["deleted_count"], 5);
  EXPECT_EQ(client().Get(MemoryPrefix() + "/memories?user_id=" + user).Json()["total"], 0);
  EXPECT_TRUE(
      IsError(client().Delete(MemoryPrefix() + "/memories"), 400, "InvalidParameter", "user_id"));
}

TEST_F(MemoryApiTest, EntitiesListWhatAScopeMentionsWithAliasesMerged) {
  const std::string user = UniqueId("u");
  const std::string other_user = UniqueId("u");
  AddMemoriesAndWait(
      client(), {{"messages",
                  {{{"role", "user"}, {"content", "I met Melanie Smith at the Louvre."}},
                   {{"role", "assistant"}, {"content", "How is Melanie doing?"}},
                   {{"role", "user"}, {"content", "Yes, Mel is great; she fixed parse_config."}}}},
                 {"user_id", user},
                 {"metadata", {{"session_id", "s1"}}},
                 {"infer", false}});
  AddMemoriesAndWait(
      client(),
      {{"messages", "Lunch with Oscar in Lisbon"}, {"user_id", other_user}, {"infer", false}});
  HttpResponse r = client().Get(MemoryPrefix() + "/entities?user_id=" + user);
  ASSERT_EQ(r.status, 200) << r.Describe();
  const json j = r.Json();
  EXPECT_EQ(j["total"], 3) << j.dump();
  ASSERT_EQ(j["results"].size(), 3u) << j.dump();
  const json& melanie = j["results"][0];
  EXPECT_EQ(melanie["name"], "Melanie Smith");
  EXPECT_EQ(melanie["kind"], "name");
  EXPECT_EQ(melanie["aliases"], json::array({"Mel", "Melanie"}));
  EXPECT_EQ(melanie["memory_count"], 3);
  EXPECT_TRUE(melanie["first_seen"].is_string());
  EXPECT_TRUE(melanie["last_seen"].is_string());
  std::set<std::string> others;
  for (size_t i = 1; i < j["results"].size(); ++i) {
    others.insert(j["results"][i]["kind"].get<std::string>() + ":" +
                  j["results"][i]["name"].get<std::string>());
  }
  EXPECT_EQ(others, (std::set<std::string>{"name:Louvre", "identifier:parse_config"}));

  // Paging, and nothing of another user or workspace.
  json page = client()
                  .Get(MemoryPrefix() + "/entities?user_id=" + user + "&page_number=2&page_size=2")
                  .Json();
  EXPECT_EQ(page["total"], 3);
  EXPECT_EQ(page["results"].size(), 1u);
  json other = client().Get(MemoryPrefix() + "/entities?user_id=" + other_user).Json();
  ASSERT_EQ(other["results"].size(), 2u) << other.dump();
  EXPECT_EQ(client().Get(MemoryPrefix("team-b") + "/entities?user_id=" + user).Json()["total"], 0);

  EXPECT_TRUE(
      IsError(client().Get(MemoryPrefix() + "/entities"), 400, "InvalidParameter", "user_id"));
  EXPECT_TRUE(IsError(client().Get(MemoryPrefix() + "/entities?user_id=u&page_size=0"), 400,
                      "InvalidParameter", "page_size"));
  EXPECT_TRUE(IsError(client().Get(MemoryPrefix() + "/entities?user_id=u&kind=name"), 400,
                      "InvalidParameter", "kind"));
}

TEST_F(MemoryApiTest, ExpiredMemoriesAreInvisible) {
  const std::string user = UniqueId("u");
  const std::string word = UniqueWord();
  json expired = AddMemoriesAndWait(client(), {{"messages", "Old coupon " + word},
                                               {"user_id", user},
                                               {"expiration_date", "2020-01-01"},
                                               {"infer", false}});
  json live = AddMemoriesAndWait(client(), {{"messages", "New coupon " + word},
                                            {"user_id", user},
                                            {"expiration_date", "2999-12-31"},
                                            {"infer", false}});
  json results = SearchMemories(client(), {{"query", word}, {"user_id", user}});
  ASSERT_EQ(results.size(), 1u) << results.dump();
  EXPECT_EQ(results[0]["id"], live["results"][0]);
  EXPECT_TRUE(IsError(
      client().Get(MemoryPrefix() + "/memories/" + expired["results"][0].get<std::string>()), 404,
      "NotFound"));
}

// Events acknowledged before a kill -9 all finish after the restart.
TEST(MemoryDurabilityTest, PendingEventsResumeAfterKill9) {
  ENGRAM_REQUIRE_BINARY();
  ServerProcess server({.extra_args = {"--event-workers", "1"}});
  ASSERT_TRUE(server.Start());
  HttpClient client(server.BaseUrl());
  const std::string user = UniqueId("u");
  std::vector<std::string> events;
  for (int i = 0; i < 60; ++i) {
    HttpResponse r = client.Post(
        MemoryPrefix() + "/memories/add",
        json{{"messages", json::array({{{"role", "user"},
                                        {"content", "I live in town number " + std::to_string(i) +
                                                        ". My favorite color is shade " +
                                                        std::to_string(i) + "."}}})},
             {"user_id", user + "-" + std::to_string(i)}});
    ASSERT_EQ(r.status, 200) << r.Describe();
    events.push_back(r.Json()["event_id"]);
  }
  server.Kill();
  ASSERT_TRUE(server.Start());
  client.set_base_url(server.BaseUrl());
  for (const auto& id : events) {
    json e = WaitMemoryEvent(client, id);
    EXPECT_EQ(e.value("status", ""), "SUCCEEDED") << e.dump();
  }
}

// Adds from several clients at once, killed right after the last acknowledgement: every
// acknowledged event is found after the restart (most of them only in the intake journal at the
// kill: an event's row is written with its end) and finishes.
TEST(MemoryDurabilityTest, ConcurrentlyAcknowledgedEventsSurviveKill9) {
  ENGRAM_REQUIRE_BINARY();
  ServerProcess server({.extra_args = {"--event-workers", "1"}});
  ASSERT_TRUE(server.Start());
  constexpr int kClients = 8, kPer = 25;
  std::vector<std::vector<std::string>> events(kClients);
  std::vector<std::thread> clients;
  for (int c = 0; c < kClients; ++c) {
    clients.emplace_back([&, c] {
      HttpClient client(server.BaseUrl());
      for (int i = 0; i < kPer; ++i) {
        HttpResponse r = client.Post(
            MemoryPrefix() + "/memories/add",
            json{{"messages", json::array({{{"role", "user"},
                                            {"content", "I keep " + std::to_string(c * 100 + i) +
                                                            " stamps in my album."}}})},
                 {"user_id", UniqueId("kill") + "-" + std::to_string(c)}});
        if (r.status != 200) {
          ADD_FAILURE() << r.Describe();
          return;
        }
        events[c].push_back(r.Json()["event_id"]);
      }
    });
  }
  for (auto& t : clients) t.join();
  server.Kill();
  ASSERT_TRUE(server.Start());
  HttpClient client(server.BaseUrl());
  int checked = 0;
  for (const auto& ids : events) {
    for (const auto& id : ids) {
      json e = WaitMemoryEvent(client, id);
      EXPECT_EQ(e.value("status", ""), "SUCCEEDED") << id << " " << e.dump();
      ++checked;
    }
  }
  EXPECT_EQ(checked, kClients * kPer);
}

}  // namespace
}  // namespace engram::testing
