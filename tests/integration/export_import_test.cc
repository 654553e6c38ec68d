// `engram export` of a serving server and `engram import` into a new data directory
// (docs/operations.md, "Export and import"; docs/export-format.md): a server started on the
// imported directory answers searches, listings and histories as the original does; an import
// into a directory a server is using is refused; an import run again writes nothing; a file with
// a bad line writes nothing.
#include <chrono>
#include <filesystem>
#include <fstream>
#include <thread>

#include "common/codec.h"
#include "memory_client.h"
#include "test_util.h"
#include "zip_writer.h"

namespace engram::testing {
namespace {

using nlohmann::json;

json WithoutTimings(json j) {
  j.erase("request_id");
  j.erase("latency");
  return j;
}

const std::string kV3 = "/v3/openapi/workspaces/default/memory/agentic-memory";

// A knowledge-base document of the import directory, uploaded and polled until it is parsed.
void UploadDocument(const HttpClient& client, const std::string& kb, const std::string& file,
                    const std::string& id) {
  HttpResponse r = client.Post(
      kV3 + "/knowledge-bases/" + kb + "/docs",
      json{{"type", "LOCAL"}, {"doc", {{"title", "Guide " + id}, {"file_url", file}, {"id", id}}}});
  ASSERT_EQ(r.status, 200) << r.Describe();
  for (int i = 0; i < 1000; ++i) {
    json doc = client.Get(kV3 + "/knowledge-bases/" + kb + "/docs/" + id).Json()["result"];
    if (doc.value("status", "") == "SUCCESS") return;
    ASSERT_EQ(doc.value("status", ""), "PROCESSING") << doc.dump();
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  FAIL() << "document " << id << " was never parsed";
}

TEST(ExportImportTest, AnImportedServerAnswersAsTheExportedOneDid) {
  ENGRAM_REQUIRE_BINARY();
  TempDir scratch;
  ASSERT_FALSE(scratch.path.empty());
  const std::string import_dir = scratch.path + "/import";
  std::filesystem::create_directories(import_dir);
  ServerOptions options;
  options.extra_args = {"--import-dir", import_dir};
  ServerProcess original(options);
  ASSERT_TRUE(original.Start());
  HttpClient client(original.BaseUrl());

  // Leaderboard messages, one with an image.
  const std::string user = UniqueId("eval:run:export:user");
  std::vector<std::string> words;
  for (int i = 0; i < 12; ++i) {
    words.push_back(UniqueWord());
    json content = "Entry " + std::to_string(i) + " mentions " + words.back() + " and the harbour.";
    if (i == 0) {
      content = json::array({{{"type", "text"}, {"text", content}}, ImagePart(TinyPngBytes())});
    }
    json body = AddBody(UniqueId("eval:run:export:add"), user, "eval:run:export:s1",
                        json::array({Message(content, 1704067200000 + i * 60000)}));
    ASSERT_TRUE(IsAddSuccess(client.Post(kAddPath, body), body));
  }
  // V4 memories said in January 2023, one of them edited since (a history of two entries).
  const std::string memory_user = UniqueId("u");
  std::string updated_id;
  for (int i = 0; i < 4; ++i) {
    json event = AddMemoriesAndWait(
        client, {{"messages", "The packing list item " + std::to_string(i) + " is " + UniqueWord()},
                 {"user_id", memory_user},
                 {"metadata", {{"n", i}}},
                 {"timestamp", "2023-01-10T08:00:00Z"},
                 {"infer", false}});
    ASSERT_EQ(event.value("status", ""), "SUCCEEDED") << event.dump();
    updated_id = event["results"][0];
  }
  HttpResponse put =
      client.Request("PUT", MemoryPrefix() + "/memories/" + updated_id,
                     json{{"text", "The packing list ends with " + UniqueWord()}}.dump(),
                     {{"Content-Type", "application/json"}});
  ASSERT_EQ(put.status, 200) << put.Describe();

  // A skill (imported as a ZIP) and a knowledge base with a parsed document.
  const std::string skill_user = UniqueId("u");
  const std::string skill_word = UniqueWord();
  HttpResponse skill = client.Post(
      kV3 + "/skills/import",
      json{{"zip_base64",
            Base64Encode(MakeZip(
                {{"SKILL.md", "---\nname: rotate-" + skill_word + "\ndescription: Rotate the " +
                                  skill_word + " keys\n---\n# Steps\n1. Rotate.\n"}}))},
           {"user_id", skill_user}});
  ASSERT_EQ(skill.status, 200) << skill.Describe();
  const std::string skill_id = skill.Json()["result"]["data"][0].value("id", "");
  ASSERT_FALSE(skill_id.empty()) << skill.Describe();
  const std::string doc_word = UniqueWord();
  std::ofstream(import_dir + "/guide.md")
      << "# Keys\n\nRotate the " << doc_word << " keys every month.\n";
  UploadDocument(client, "kb1", "guide.md", "guide-1");

  const std::string file = scratch.path + "/all.jsonl";
  CommandResult exported = RunEngram("export --data-dir " + original.data_dir() + " " + file);
  ASSERT_EQ(exported.exit_code, 0) << exported.output;
  EXPECT_NE(exported.output.find("exported 12 Leaderboard messages, 1 images, 4 agent memories, 1 "
                                 "skills, 1 knowledge-base documents"),
            std::string::npos)
      << exported.output;

  // The server holds its data directory: an import there is refused and writes nothing.
  CommandResult refused = RunEngram("import --data-dir " + original.data_dir() + " " + file);
  EXPECT_EQ(refused.exit_code, 1) << refused.output;
  EXPECT_NE(refused.output.find("in use by another Engram process"), std::string::npos)
      << refused.output;

  const std::string imported_dir = scratch.path + "/imported";
  CommandResult imported = RunEngram("import --data-dir " + imported_dir + " " + file);
  ASSERT_EQ(imported.exit_code, 0) << imported.output;
  EXPECT_NE(imported.output.find("imported 12 Leaderboard messages"), std::string::npos)
      << imported.output;
  CommandResult again = RunEngram("import --data-dir " + imported_dir + " " + file);
  ASSERT_EQ(again.exit_code, 0) << again.output;
  EXPECT_NE(again.output.find("imported 0 Leaderboard messages, 0 images, 0 agent memories, 0 "
                              "skills, 0 knowledge-base documents; already there: 12 "
                              "Leaderboard messages, 1 images, 4 agent memories"),
            std::string::npos)
      << again.output;

  ServerProcess copy({.data_dir = imported_dir});
  ASSERT_TRUE(copy.Start());
  HttpClient copy_client(copy.BaseUrl());
  for (const std::string& w : words) {
    const json found = SearchData(client, user, w);
    ASSERT_EQ(CountContaining(found, w), 1) << w;
    EXPECT_EQ(SearchData(copy_client, user, w), found) << w;
  }
  EXPECT_EQ(SearchData(copy_client, user, "harbour entry", 100),
            SearchData(client, user, "harbour entry", 100));
  const std::string list = MemoryPrefix() + "/memories?user_id=" + memory_user;
  HttpResponse original_list = client.Get(list), copy_list = copy_client.Get(list);
  ASSERT_EQ(copy_list.status, 200) << copy_list.Describe();
  EXPECT_EQ(WithoutTimings(copy_list.Json()), WithoutTimings(original_list.Json()));
  const std::string history = MemoryPrefix() + "/memories/" + updated_id + "/history";
  HttpResponse original_history = client.Get(history), copy_history = copy_client.Get(history);
  ASSERT_EQ(copy_history.status, 200) << copy_history.Describe();
  EXPECT_EQ(copy_history.Json()["results"].size(), 2u) << copy_history.Describe();
  EXPECT_EQ(WithoutTimings(copy_history.Json()), WithoutTimings(original_history.Json()));
  // Skills and knowledge bases: the same gets, listings and searches.
  for (const std::string& path :
       {kV3 + "/skills/" + skill_id + "?user_id=" + skill_user, kV3 + "/knowledge-bases/kb1/docs",
        kV3 + "/knowledge-bases/kb1/docs/guide-1"}) {
    HttpResponse a = client.Get(path), b = copy_client.Get(path);
    ASSERT_EQ(b.status, 200) << path << ": " << b.Describe();
    EXPECT_EQ(WithoutTimings(b.Json()), WithoutTimings(a.Json())) << path;
  }
  const json skill_search = {{"query", skill_word}, {"user_id", skill_user}};
  const json kb_search = {{"query", doc_word + " keys"}, {"top_k", 5}};
  json skills_found = client.Post(kV3 + "/skills/search", skill_search).Json()["result"];
  EXPECT_EQ(skills_found["results"].size(), 1u) << skills_found.dump();
  EXPECT_EQ(copy_client.Post(kV3 + "/skills/search", skill_search).Json()["result"], skills_found);
  json docs_found = client.Post(kV3 + "/knowledge-bases/kb1/search", kb_search).Json()["result"];
  EXPECT_FALSE(docs_found["results"].empty()) << docs_found.dump();
  EXPECT_EQ(copy_client.Post(kV3 + "/knowledge-bases/kb1/search", kb_search).Json()["result"],
            docs_found);

  const json query = {{"query", "packing list item"}, {"user_id", memory_user}};
  const auto memories = SearchMemories(client, query);
  EXPECT_EQ(memories.size(), 4u);
  EXPECT_EQ(SearchMemories(copy_client, query), memories);
  // The edited memory's replaced version answers a search about 2023, in the copy as well.
  const json then = {{"query", "packing list item in 2023"}, {"user_id", memory_user}};
  const auto then_found = SearchMemories(client, then);
  bool shows_replaced = false;
  for (const json& m : then_found) {
    shows_replaced |= m.value("id", "") == updated_id && m["valid_to"].is_string();
  }
  EXPECT_TRUE(shows_replaced) << then_found.dump();
  EXPECT_EQ(SearchMemories(copy_client, then), then_found);
}

TEST(ExportImportTest, AFileWithABadLineWritesNothing) {
  ENGRAM_REQUIRE_BINARY();
  TempDir scratch;
  ASSERT_FALSE(scratch.path.empty());
  const std::string file = scratch.path + "/bad.jsonl";
  std::ofstream(file)
      << R"({"format":"engram-export","version":1})"
      << "\n"
      << R"({"type":"leaderboard_message","workspace":"default","user_id":"u","id":"m-1",)"
      << R"("text":"kept?","created_at_us":1,"updated_at_us":1})"
      << "\n"
      << R"({"type":"skill","workspace":"default","id":"s-1"})"
      << "\n";
  const std::string dir = scratch.path + "/data";
  CommandResult checked = RunEngram("import --check " + file);
  EXPECT_EQ(checked.exit_code, 1) << checked.output;
  EXPECT_NE(checked.output.find("line 3: skill.owner: missing"), std::string::npos)
      << checked.output;
  CommandResult imported = RunEngram("import --data-dir " + dir + " " + file);
  EXPECT_EQ(imported.exit_code, 1) << imported.output;
  EXPECT_NE(imported.output.find("line 3: skill.owner: missing"), std::string::npos)
      << imported.output;

  EXPECT_FALSE(std::filesystem::exists(dir)) << "a bad file made the data directory";
  ServerProcess server({.data_dir = dir});
  ASSERT_TRUE(server.Start());
  HttpClient client(server.BaseUrl());
  EXPECT_EQ(CountContaining(SearchData(client, "u", "kept"), "kept"), 0);
}

}  // namespace
}  // namespace engram::testing
