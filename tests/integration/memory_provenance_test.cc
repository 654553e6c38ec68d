// Provenance of V4 memories against a real server: every memory an add writes names its event,
// extractor and source messages (index, role, speaker name, time); an UPDATE names the text it
// replaced; an edit through the API says so; GET, search and history show it. Message names and
// timestamps are validated, and a bad one stores nothing.
#include "memory_client.h"
#include "test_util.h"

namespace engram::testing {
namespace {

using nlohmann::json;

class MemoryProvenanceTest : public SharedServerTest {};

json GetMemory(const HttpClient& client, const std::string& id) {
  HttpResponse r = client.Get(MemoryPrefix() + "/memories/" + id);
  EXPECT_EQ(r.status, 200) << r.Describe();
  return r.Json();
}

HttpResponse Put(const HttpClient& client, const std::string& id, const json& body) {
  return client.Request("PUT", MemoryPrefix() + "/memories/" + id, body.dump(),
                        {{"Content-Type", "application/json"}});
}

json History(const HttpClient& client, const std::string& id) {
  HttpResponse r = client.Get(MemoryPrefix() + "/memories/" + id + "/history");
  EXPECT_EQ(r.status, 200) << r.Describe();
  return r.Json().value("results", json::array());
}

// The memory an event ADDed or UPDATEd with `text`; "" if none.
std::string MemoryWithText(const json& event, const std::string& text) {
  for (const json& e : event.value("events", json::array())) {
    if (e.value("memory", "") == text && e.value("event", "") != "NONE") {
      return e.value("memory_id", "");
    }
  }
  return "";
}

TEST_F(MemoryProvenanceTest, ExtractedMemoriesCiteTheirEventAndMessages) {
  const std::string user = UniqueId("u");
  json event = AddMemoriesAndWait(
      client(),
      {{"messages",
        {{{"role", "user"}, {"content", "Hi there!"}, {"timestamp", "2024-05-08T09:00:00Z"}},
         {{"role", "user"},
          {"content", "I am allergic to peanuts."},
          {"timestamp", "2024-05-08T10:00:00Z"}}}},
       {"user_id", user}});
  ASSERT_EQ(event.value("status", ""), "SUCCEEDED") << event.dump();
  const std::string id = MemoryWithText(event, "User is allergic to peanuts");
  ASSERT_FALSE(id.empty()) << event.dump();

  const json p = GetMemory(client(), id)["provenance"];
  ASSERT_TRUE(p.is_object()) << p.dump();
  EXPECT_EQ(p["source"], "extraction");
  EXPECT_EQ(p["event_id"], event["id"]);
  EXPECT_EQ(p["extractor"], "rule-based");
  EXPECT_FALSE(p.contains("replaced"));
  ASSERT_EQ(p["messages"].size(), 1u) << p.dump();
  EXPECT_EQ(p["messages"][0],
            json({{"index", 1}, {"role", "user"}, {"timestamp", "2024-05-08T10:00:00.000000Z"}}));

  // Search results and history carry it too.
  json hits = SearchMemories(client(), {{"query", "peanut allergy"}, {"user_id", user}});
  ASSERT_FALSE(hits.empty());
  EXPECT_EQ(hits[0]["provenance"], p);
  json history = History(client(), id);
  ASSERT_EQ(history.size(), 1u);
  EXPECT_EQ(history[0]["provenance"], p);
}

TEST_F(MemoryProvenanceTest, AnUpdateNamesWhatItReplacedAndAnEditSaysItCameFromTheApi) {
  const std::string user = UniqueId("u");
  json first = AddMemoriesAndWait(client(), {{"messages", "I live in Paris."}, {"user_id", user}});
  const std::string id = MemoryWithText(first, "User lives in Paris");
  ASSERT_FALSE(id.empty()) << first.dump();
  json second = AddMemoriesAndWait(client(), {{"messages", "I moved to Berlin last year."},
                                              {"user_id", user},
                                              {"timestamp", "2026-06-15T10:00:00Z"}});
  ASSERT_EQ(second["events"].size(), 1u) << second.dump();
  ASSERT_EQ(second["events"][0]["event"], "UPDATE") << second.dump();
  ASSERT_EQ(second["events"][0]["memory_id"], id);

  json p = GetMemory(client(), id)["provenance"];
  EXPECT_EQ(p["event_id"], second["id"]);
  EXPECT_EQ(p["replaced"], json({{"text", "User lives in Paris"}, {"event_id", first["id"]}}));
  EXPECT_EQ(p["messages"][0]["timestamp"], "2026-06-15T10:00:00.000000Z");

  HttpResponse edit = Put(client(), id, {{"text", "User lives in Berlin-Mitte"}});
  ASSERT_EQ(edit.status, 200) << edit.Describe();
  const std::string updated_text = second["events"][0]["memory"];
  const json edited = GetMemory(client(), id);
  p = edited["provenance"];
  ASSERT_TRUE(p["edited_at"].is_string()) << p.dump();
  EXPECT_EQ(p, json({{"source", "api"},
                     {"edited_at", p["edited_at"]},
                     {"replaced", {{"text", updated_text}, {"event_id", second["id"]}}}}));
  // The edited text holds from the edit.
  EXPECT_EQ(edited["valid_from"], p["edited_at"]);
  EXPECT_TRUE(edited["valid_to"].is_null());

  // Metadata-only edits keep the provenance.
  ASSERT_EQ(Put(client(), id, {{"metadata", {{"k", 1}}}}).status, 200);
  EXPECT_EQ(GetMemory(client(), id)["provenance"], p);

  json history = History(client(), id);
  ASSERT_EQ(history.size(), 4u) << history.dump();
  EXPECT_EQ(history[0]["provenance"]["event_id"], first["id"]);
  EXPECT_EQ(history[1]["provenance"]["event_id"], second["id"]);
  EXPECT_EQ(history[2]["provenance"]["source"], "api");
  // Each version's time: the first was learned when added; the update's message is dated
  // earlier, so the first version ends where it began; the edit holds from its edit, and the
  // metadata-only change continues it.
  EXPECT_EQ(history[0]["valid_to"], history[0]["valid_from"]) << history.dump();
  EXPECT_EQ(history[1]["valid_from"], "2026-06-15T10:00:00.000000Z");
  EXPECT_EQ(history[1]["valid_to"], history[2]["valid_from"]);
  EXPECT_EQ(history[2]["valid_from"], p["edited_at"]);
  EXPECT_EQ(history[3]["valid_from"], p["edited_at"]);
  EXPECT_TRUE(history[3]["valid_to"].is_null()) << history[3].dump();

  ASSERT_EQ(client().Delete(MemoryPrefix() + "/memories/" + id).status, 200);
  history = History(client(), id);
  ASSERT_EQ(history.size(), 5u);
  EXPECT_TRUE(history[4]["provenance"].is_null()) << history[4].dump();
  // Deleted: the last version ended then; the DELETE entry wrote none.
  EXPECT_EQ(history[3]["valid_to"], history[4]["created_at"]);
  EXPECT_EQ(history[2]["valid_to"], history[4]["created_at"]);
  EXPECT_TRUE(history[4]["valid_from"].is_null());
  EXPECT_TRUE(history[4]["valid_to"].is_null());
}

// A fact learned in 2022 and replaced in 2024: get shows the current version and when it began;
// a search about 2022 (a year, or relative dates with a reference_date) shows the version that
// held then and when it was replaced; a search without dates the current one.
TEST_F(MemoryProvenanceTest, ASearchAboutAnEarlierTimeShowsTheVersionThatHeldThen) {
  const std::string user = UniqueId("u");
  json first = AddMemoriesAndWait(
      client(),
      {{"messages", "I live in Paris."}, {"user_id", user}, {"timestamp", "2022-03-01T10:00:00Z"}});
  const std::string id = MemoryWithText(first, "User lives in Paris");
  ASSERT_FALSE(id.empty()) << first.dump();
  json second = AddMemoriesAndWait(client(), {{"messages", "I live in Berlin."},
                                              {"user_id", user},
                                              {"timestamp", "2024-06-15T10:00:00Z"}});
  ASSERT_EQ(second["events"][0]["event"], "UPDATE") << second.dump();
  const std::string current = second["events"][0]["memory"];

  const json now = GetMemory(client(), id);
  EXPECT_EQ(now["memory"], current);
  EXPECT_EQ(now["valid_from"], "2024-06-15T10:00:00.000000Z");
  EXPECT_TRUE(now["valid_to"].is_null()) << now.dump();

  auto top = [&](const json& extra) {
    json body = {{"user_id", user}, {"top_k", 5}};
    body.update(extra);
    json results = SearchMemories(client(), body);
    EXPECT_FALSE(results.empty()) << body.dump();
    return results.empty() ? json::object() : results[0];
  };
  for (const json& then : {top({{"query", "Where did I live in 2022?"}}),
                           top({{"query", "Where did I live last year?"},
                                {"reference_date", "2023-02-01T00:00:00Z"}})}) {
    EXPECT_EQ(then["id"], id);
    EXPECT_EQ(then["memory"], "User lives in Paris") << then.dump();
    EXPECT_EQ(then["valid_from"], "2022-03-01T10:00:00.000000Z");
    EXPECT_EQ(then["valid_to"], "2024-06-15T10:00:00.000000Z");
    EXPECT_EQ(then["provenance"]["event_id"], first["id"]);
  }
  const json today = top({{"query", "Where do I live?"}});
  EXPECT_EQ(today["memory"], current);
  EXPECT_TRUE(today["valid_to"].is_null()) << today.dump();
  // Another user's search about 2022 sees nothing of it.
  EXPECT_TRUE(
      SearchMemories(client(), {{"user_id", UniqueId("u")}, {"query", "Where did I live in 2022?"}})
          .empty());
}

TEST_F(MemoryProvenanceTest, VerbatimMemoriesCiteTheirMessageAndSpeaker) {
  const std::string user = UniqueId("u");
  json event = AddMemoriesAndWait(
      client(), {{"messages",
                  {{{"role", "user"}, {"name", "Caroline"}, {"content", "We adopted a puppy."}},
                   {{"role", "assistant"}, {"content", "Congratulations!"}},
                   {{"role", "user"}, {"name", "Caroline"}, {"content", "We adopted a puppy."}}}},
                 {"user_id", user},
                 {"infer", false},
                 {"timestamp", 1715162400}});
  ASSERT_EQ(event["results"].size(), 2u) << event.dump();  // the repeat is the same memory
  json puppy = GetMemory(client(), event["events"][0]["memory_id"]);
  EXPECT_EQ(puppy["memory"], "Caroline: We adopted a puppy.") << "a named speaker is kept";
  EXPECT_EQ(puppy["provenance"], json({{"source", "verbatim"},
                                       {"event_id", event["id"]},
                                       {"messages",
                                        {{{"index", 0},
                                          {"role", "user"},
                                          {"name", "Caroline"},
                                          {"timestamp", "2024-05-08T10:00:00.000000Z"}}}}}));
  json reply = GetMemory(client(), event["events"][1]["memory_id"]);
  EXPECT_EQ(reply["provenance"]["messages"][0]["index"], 1);
  EXPECT_EQ(reply["provenance"]["messages"][0]["role"], "assistant");
  EXPECT_EQ(reply["memory"], "Congratulations!") << "no name: the message as it was sent";
}

TEST_F(MemoryProvenanceTest, BadNamesAndTimestampsAreRefusedAndStoreNothing) {
  const std::string user = UniqueId("u");
  auto add = [&](json message) {
    return client().Post(
        MemoryPrefix() + "/memories/add",
        json{{"messages", {{{"role", "user"}, {"content", "I like tea."}}, std::move(message)}},
             {"user_id", user}});
  };
  const json base = {{"role", "user"}, {"content", "I live in Oslo."}};
  struct Case {
    json patch;
    std::string field;
  };
  const std::vector<Case> cases = {
      {{{"name", 7}}, "messages[1].name"},
      {{{"name", ""}}, "messages[1].name"},
      {{{"name", "   "}}, "messages[1].name"},
      {{{"name", "line\nbreak"}}, "messages[1].name"},
      {{{"name", std::string(65, 'a')}}, "messages[1].name"},
      {{{"timestamp", "yesterday"}}, "messages[1].timestamp"},
      {{{"timestamp", -5}}, "messages[1].timestamp"},
      {{{"timestamp", true}}, "messages[1].timestamp"},
  };
  for (const Case& c : cases) {
    json message = base;
    message.update(c.patch);
    HttpResponse r = add(message);
    EXPECT_TRUE(IsError(r, 400, "InvalidParameter", c.field)) << c.patch.dump() << r.Describe();
  }
  HttpResponse list = client().Get(MemoryPrefix() + "/memories?user_id=" + user);
  ASSERT_EQ(list.status, 200) << list.Describe();
  EXPECT_EQ(list.Json()["total"], 0) << list.body;
}

}  // namespace
}  // namespace engram::testing
