// The Agentic Memory V3 skill endpoints (docs/api/README.md, "Skills (V3)") against a real server:
// ZIP imports built here with libarchive (single and multi-skill, and every hostile case), get,
// search ranking, owner checks on get, update and delete, versions, extraction tasks with the
// built-in and the LLM extractor, a task that survives kill -9, and hostile front matter (alias
// bombs) and entries (FIFOs) that must leave the server small and up.
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <set>
#include <thread>

#include "common/codec.h"
#include "python_fake.h"
#include "test_util.h"
#include "zip_writer.h"

namespace engram::testing {
namespace {

using nlohmann::json;
using namespace std::chrono_literals;
using Kind = ZipEntry::Kind;

std::string P3(std::string_view workspace = "default") {
  return "/v3/openapi/workspaces/" + std::string(workspace) + "/memory/agentic-memory";
}

// The `result` of a V3 success envelope; reports a failure (and returns null) otherwise.
json Result(const HttpResponse& r) {
  EXPECT_EQ(r.status, 200) << r.Describe();
  json j = r.Json();
  EXPECT_TRUE(j.is_object() && j.value("status", "") == "OK" && j.contains("request_id") &&
              j.contains("latency") && j.contains("result"))
      << r.body;
  return j.is_object() && j.contains("result") ? j["result"] : json();
}

json ImportBody(const std::string& zip, const std::string& user) {
  return {{"zip_base64", Base64Encode(zip)}, {"user_id", user}};
}

json Search(const HttpClient& c, const std::string& user, const std::string& query, int size = 10) {
  json r = Result(
      c.Post(P3() + "/skills/search", json{{"query", query}, {"user_id", user}, {"size", size}}));
  return r.is_object() ? r["results"] : json::array();
}

json WaitTask(const HttpClient& c, const std::string& id) {
  json last;
  const auto deadline = std::chrono::steady_clock::now() + 30s;
  while (std::chrono::steady_clock::now() < deadline) {
    HttpResponse r = c.Get(P3() + "/skills/tasks/" + id);
    if (r.status != 200) {
      ADD_FAILURE() << r.Describe();
      return json();
    }
    last = Result(r);
    const std::string s = last.value("status", "");
    if (s == "completed" || s == "failed") return last;
    std::this_thread::sleep_for(20ms);
  }
  ADD_FAILURE() << "task " << id << " did not finish: " << last.dump();
  return last;
}

std::string Md(const std::string& name, const std::string& description,
               const std::string& extra = "", const std::string& body = "# Steps\n1. Do it.\n") {
  return "---\nname: " + name + "\ndescription: " + description + "\n" + extra + "---\n" + body;
}

// Under a memory limit: a bomb the server failed to bound would end in its allocation failure
// (and the tests failing), not in the machine swapping.
class SkillApiTest : public SharedServerTest {
 protected:
  ServerOptions Options() const override {
    ServerOptions o;
    o.memory_limit_mb = 1536;
    return o;
  }
};

TEST_F(SkillApiTest, ImportsOneSkillAtTheRootAndGetsItBack) {
  const std::string user = UniqueId("u");
  const std::string zip = MakeZip(
      {{"SKILL.md",
        Md("pdf-tools", "Extract text and tables from PDF files",
           "version: 2.1.0\ntags: [pdf, documents]\ntriggers:\n  - read a pdf\nlicense: MIT\n")},
       {"scripts/", "", Kind::kDir},
       {"scripts/extract.py", "print('hi')\n"},
       {"references/api.md", "# API\n"},
       {"_meta.json", R"({"author": "ops"})"}});
  json r = Result(client().Post(P3() + "/skills/import", ImportBody(zip, user)));
  ASSERT_EQ(r.value("imported_count", 0), 1) << r.dump();
  const json& s = r["data"][0];
  EXPECT_EQ(s["id"].get<std::string>().rfind("s-", 0), 0u);
  EXPECT_EQ(s["name"], "pdf-tools");
  EXPECT_EQ(s["description"], "Extract text and tables from PDF files");
  EXPECT_EQ(s["version"], "2.1.0");
  EXPECT_EQ(s["owner"], user);
  EXPECT_EQ(s["tags"], json({"pdf", "documents"}));
  EXPECT_EQ(s["triggers"], json({"read a pdf"}));
  EXPECT_EQ(s["resource_paths"], json({"_meta.json", "references/api.md", "scripts/extract.py"}));
  EXPECT_TRUE(s["updated_at"].get<std::string>().ends_with("Z"));

  json got =
      Result(client().Get(P3() + "/skills/" + s["id"].get<std::string>() + "?user_id=" + user));
  EXPECT_EQ(got["skill_id"], s["id"]);
  // The reference shows an unset agent_id as "", never null.
  EXPECT_TRUE(HasFieldTypes(got, {{"skill_id", JsonType::kString},
                                  {"name", JsonType::kString},
                                  {"description", JsonType::kString},
                                  {"version", JsonType::kString},
                                  {"files", JsonType::kObject},
                                  {"tags", JsonType::kArray},
                                  {"user_id", JsonType::kString},
                                  {"agent_id", JsonType::kString},
                                  {"updated_at", JsonType::kString}}));
  EXPECT_EQ(got["user_id"], user);
  EXPECT_EQ(got["files"]["scripts/extract.py"], "print('hi')\n");
  EXPECT_NE(got["files"]["SKILL.md"].get<std::string>().find("name: pdf-tools"), std::string::npos);
  EXPECT_EQ(got["metadata"]["author"], "ops");
  EXPECT_EQ(got["license"], "MIT");
}

TEST_F(SkillApiTest, ImportsOneSkillPerFolderAndSearchRanksByIntent) {
  const std::string user = UniqueId("u");
  const std::string zip = MakeZip(
      {{"deploy/SKILL.md", Md("deploy-web-app", "Deploy the web application to the staging cluster",
                              "triggers: [ship to staging]\n",
                              "1. Run the tests.\n2. Build the docker image.\n3. Roll out.\n")},
       {"bread/SKILL.md",
        Md("bake-sourdough", "Bake a loaf of sourdough bread at home", "tags: [baking, bread]\n",
           "1. Feed the starter.\n2. Knead the dough.\n3. Bake at 250C.\n")},
       {"router/SKILL.md", Md("reset-router", "Reset a home wifi router to factory settings")},
       {"router/assets/diagram.txt", "[router]--[modem]"}});
  json r = Result(client().Post(P3() + "/skills/import", ImportBody(zip, user)));
  ASSERT_EQ(r.value("imported_count", 0), 3) << r.dump();

  json hits = Search(client(), user, "how do I bake bread with my sourdough starter");
  ASSERT_FALSE(hits.empty());
  EXPECT_EQ(hits[0]["name"], "bake-sourdough");
  EXPECT_EQ(hits[0]["user_id"], user);
  EXPECT_GT(hits[0]["score"].get<double>(), 0.0);
  hits = Search(client(), user, "ship the application to staging");
  ASSERT_FALSE(hits.empty());
  EXPECT_EQ(hits[0]["name"], "deploy-web-app");
  hits = Search(client(), user, "wifi router factory reset", 1);
  ASSERT_EQ(hits.size(), 1u);
  EXPECT_EQ(hits[0]["name"], "reset-router");
  EXPECT_FALSE(hits[0].contains("explain")) << "only when asked";
  json explained = Result(client().Post(
      P3() + "/skills/search",
      json{{"query", "wifi router factory reset"}, {"user_id", user}, {"explain", true}}));
  ASSERT_FALSE(explained["results"].empty()) << explained.dump();
  const json& top = explained["results"][0];
  EXPECT_EQ(top["name"], "reset-router");
  EXPECT_EQ(top["explain"]["fusion"]["method"], "zscore") << top.dump();
  EXPECT_GT(top["explain"]["fusion"]["bm25"]["score"].get<double>(), 0.0) << top.dump();
  EXPECT_TRUE(top["explain"]["fusion"]["vector"]["part"].is_number()) << top.dump();
  EXPECT_EQ(top["explain"]["fusion"]["score"], top["score"]);
  // Another user sees none of them.
  EXPECT_TRUE(Search(client(), UniqueId("u"), "sourdough bread").empty());

  // Listed a page at a time; only the owner's.
  json page = Result(client().Get(P3() + "/skills?user_id=" + user + "&page_size=2"));
  EXPECT_EQ(page.value("total", 0), 3) << page.dump();
  ASSERT_EQ(page["results"].size(), 2u) << page.dump();
  json rest = Result(client().Get(P3() + "/skills?user_id=" + user + "&page_size=2&page_number=2"));
  ASSERT_EQ(rest["results"].size(), 1u) << rest.dump();
  std::set<std::string> names;
  for (const json& p : {page, rest}) {
    for (const json& s : p["results"]) {
      names.insert(s["name"].get<std::string>());
      EXPECT_EQ(s["user_id"], user);
      EXPECT_TRUE(s.contains("updated_at"));
    }
  }
  EXPECT_EQ(names, (std::set<std::string>{"bake-sourdough", "deploy-web-app", "reset-router"}));
  EXPECT_GE(page["results"][0]["updated_at"].get<std::string>(),
            page["results"][1]["updated_at"].get<std::string>());
  EXPECT_EQ(Result(client().Get(P3() + "/skills?user_id=" + UniqueId("u"))).value("total", -1), 0);
}

TEST_F(SkillApiTest, SameNameImportedAgainIsANewVersion) {
  const std::string user = UniqueId("u");
  json first = Result(
      client().Post(P3() + "/skills/import",
                    ImportBody(MakeZip({{"SKILL.md", Md("brew-tea", "Brew green tea")}}), user)));
  json second = Result(client().Post(
      P3() + "/skills/import",
      ImportBody(MakeZip({{"SKILL.md", Md("brew-tea", "Brew green tea at 80 degrees")}}), user)));
  ASSERT_EQ(first["data"][0]["id"], second["data"][0]["id"]);
  EXPECT_EQ(first["data"][0]["version"], "1.0.0");
  EXPECT_EQ(second["data"][0]["version"], "1.0.1");
  json got = Result(client().Get(P3() + "/skills/" + second["data"][0]["id"].get<std::string>() +
                                 "?user_id=" + user));
  EXPECT_EQ(got["description"], "Brew green tea at 80 degrees");
  ASSERT_EQ(got["previous_versions"].size(), 1u);
  EXPECT_EQ(got["previous_versions"][0]["version"], "1.0.0");
  EXPECT_EQ(Search(client(), user, "tea").size(), 1u);
}

TEST_F(SkillApiTest, RejectsHostileArchivesAndStoresNothing) {
  const std::string user = UniqueId("u");
  const std::string word = UniqueWord();
  // Every archive also holds a valid skill: it must not be stored when the archive is rejected.
  const ZipEntry good{"good/SKILL.md", Md("good-" + word, "A valid skill " + word)};
  std::vector<ZipEntry> many = {good};
  for (int i = 0; i < 300; ++i) many.push_back({"good/f" + std::to_string(i) + ".txt", "x"});
  struct Case {
    const char* what;
    std::string zip;
    std::string expected;  // in the message
  };
  const std::vector<Case> cases = {
      {"traversal", MakeZip({good, {"good/../../etc/cron.d/x", "x"}}), "path traversal"},
      {"absolute path", MakeZip({good, {"/etc/passwd", "x"}}), "absolute"},
      {"symlink", MakeZip({good, {"good/link", "/etc/passwd", Kind::kSymlink}}), "symbolic link"},
      {"too many files", MakeZip(many), "more than 256 files"},
      {"zip bomb", MakeZip({good, {"good/bomb.txt", std::string(40 << 20, 'a')}}), "zip bomb"},
      {"bad UTF-8", MakeZip({good, {"bad/SKILL.md", "---\nname: b\ndescription: caf\xe9\n---\n"}}),
       "skill folder 'bad': SKILL.md is not UTF-8 text"},
      {"missing SKILL.md", MakeZip({good, {"other/notes.md", "n"}}),
       "skill folder 'other': SKILL.md is missing"},
      {"missing name", MakeZip({good, {"noname/SKILL.md", "---\ndescription: d\n---\n"}}),
       "skill folder 'noname': name is required"},
      {"missing description", MakeZip({good, {"nodesc/SKILL.md", "---\nname: n\n---\n"}}),
       "skill folder 'nodesc': description is required"},
      {"no front matter", MakeZip({good, {"plain/SKILL.md", "# Just text\n"}}), "front matter"},
      {"not a zip", "definitely not a zip archive", "not a readable ZIP"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.what);
    HttpResponse r = client().Post(P3() + "/skills/import", ImportBody(c.zip, user));
    EXPECT_TRUE(IsError(r, 400, "InvalidParameter")) << r.Describe();
    EXPECT_NE(r.Json().value("message", "").find(c.expected), std::string::npos) << r.body;
  }
  EXPECT_TRUE(Search(client(), user, word).empty());
}

TEST_F(SkillApiTest, ValidatesRequests) {
  const std::string user = UniqueId("u");
  EXPECT_TRUE(IsError(client().Post(P3() + "/skills/import", json{{"user_id", user}}), 400,
                      "InvalidParameter", "zip_base64"));
  EXPECT_TRUE(IsError(client().Post(P3() + "/skills/import",
                                    json{{"zip_base64", "!!notbase64!!"}, {"user_id", user}}),
                      400, "InvalidParameter", "zip_base64"));
  EXPECT_TRUE(IsError(client().Post(P3() + "/skills/import", json{{"zip_base64", "UEsFBg=="}}), 400,
                      "InvalidParameter", "user_id"));
  EXPECT_TRUE(IsError(client().Post(P3() + "/skills/search", json{{"user_id", user}}), 400,
                      "InvalidParameter", "query"));
  EXPECT_TRUE(IsError(client().Post(P3() + "/skills/search", json{{"query", "x"}}), 400,
                      "InvalidParameter", "user_id"));
  EXPECT_TRUE(IsError(
      client().Post(P3() + "/skills/search", json{{"query", "x"}, {"user_id", user}, {"size", 0}}),
      400, "InvalidParameter", "size"));
  EXPECT_TRUE(IsError(client().Post(P3() + "/skills/search",
                                    json{{"query", "x"}, {"user_id", user}, {"explain", 1}}),
                      400, "InvalidParameter", "explain"));
  EXPECT_TRUE(IsError(client().Get(P3() + "/skills"), 400, "InvalidParameter", "user_id"));
  EXPECT_TRUE(IsError(client().Get(P3() + "/skills?user_id=" + user + "&page_size=500"), 400,
                      "InvalidParameter", "page_size"));
  EXPECT_TRUE(IsError(client().Get(P3() + "/skills?user_id=" + user + "&colour=red"), 400,
                      "InvalidParameter", "colour"));
  EXPECT_TRUE(IsError(client().Post(P3() + "/skills/add", json{{"messages", "x"}}), 400,
                      "InvalidParameter", "user_id"));
  EXPECT_TRUE(IsError(client().Post(P3() + "/skills/add", json{{"user_id", user}}), 400,
                      "InvalidParameter", "messages"));
  EXPECT_TRUE(IsError(client().Get(P3() + "/skills/s-nope"), 404, "NotFound"));
  EXPECT_TRUE(IsError(client().Get(P3() + "/skills/tasks/st-nope"), 404, "NotFound"));
  EXPECT_TRUE(IsError(client().Request("PUT", P3() + "/skills/s-nope",
                                       json{{"user_id", user}, {"description", "d"}}.dump(), {}),
                      404, "NotFound"));
  EXPECT_TRUE(IsError(client().Delete(P3() + "/skills/s-nope"), 404, "NotFound"));
  EXPECT_TRUE(IsError(client().Post("/v3/openapi/workspaces/default/memory/other/skills/search",
                                    json{{"query", "x"}, {"user_id", user}}),
                      400, "ServiceIdNotExist"));
}

TEST_F(SkillApiTest, UpdateChecksTheOwnerReplacesFilesPerPathAndReindexes) {
  const std::string user = UniqueId("u");
  json imported = Result(
      client().Post(P3() + "/skills/import",
                    ImportBody(MakeZip({{"SKILL.md", Md("rotate-keys", "Rotate the API keys")},
                                        {"scripts/rotate.sh", "v1"},
                                        {"scripts/old.sh", "old"}}),
                               user)));
  const std::string id = imported["data"][0]["id"];
  const std::string path = P3() + "/skills/" + id;
  const std::string word = UniqueWord();

  // Another user's update is answered as for an unknown id.
  HttpResponse other = client().Request(
      "PUT", path, json{{"user_id", "someone-else"}, {"description", "x"}}.dump(), {});
  EXPECT_TRUE(IsError(other, 404, "NotFound")) << other.Describe();
  EXPECT_TRUE(IsError(client().Request("PUT", path, json{{"description", "x"}}.dump(), {}), 400,
                      "InvalidParameter", "user_id"));
  EXPECT_TRUE(IsError(client().Request("PUT", path, json{{"user_id", user}}.dump(), {}), 400,
                      "InvalidParameter"));
  EXPECT_TRUE(IsError(
      client().Request("PUT", path, json{{"user_id", user}, {"files", {{"../x", "y"}}}}.dump(), {}),
      400, "InvalidParameter", "files"));

  json updated = Result(client().Request(
      "PUT", path,
      json{{"user_id", user},
           {"description", "Rotate the " + word + " gateway credentials"},
           {"tags", {"security"}},
           {"files", {{"scripts/rotate.sh", "v2"}, {"scripts/old.sh", nullptr}, {"notes.md", "n"}}}}
          .dump(),
      {}));
  EXPECT_EQ(updated["skill_id"], id);
  EXPECT_EQ(updated["name"], "rotate-keys");
  EXPECT_EQ(updated["version"], "1.0.1");
  EXPECT_EQ(updated["tags"], json({"security"}));
  EXPECT_EQ(updated["files"]["scripts/rotate.sh"], "v2");
  EXPECT_FALSE(updated["files"].contains("scripts/old.sh"));
  EXPECT_EQ(updated["files"]["notes.md"], "n");
  EXPECT_NE(updated["files"]["SKILL.md"].get<std::string>().find(word), std::string::npos);
  json hits = Search(client(), user, word);
  ASSERT_EQ(hits.size(), 1u);
  EXPECT_EQ(hits[0]["skill_id"], id);

  EXPECT_TRUE(IsError(client().Delete(path + "?user_id=someone-else"), 404, "NotFound"));
  json deleted = Result(client().Delete(path + "?user_id=" + user));
  EXPECT_EQ(
      deleted,
      json({{"skill_id", id}, {"status", "success"}, {"message", "Skill " + id + " deleted"}}));
  EXPECT_TRUE(Search(client(), user, word).empty());
  EXPECT_TRUE(IsError(client().Get(path + "?user_id=" + user), 404, "NotFound"));
}

// A request that names a user_id acts only on that user's skills: another user_id gets the 404 an
// unknown id gets, and the skill stays as it was. A request that names none (as the reference's
// get and delete examples) acts for the workspace and sees the owner in the answer.
TEST_F(SkillApiTest, GetAndDeleteNamingAnotherUserAre404AndNamingNoneActForTheWorkspace) {
  const std::string owner = UniqueId("u");
  const std::string other = UniqueId("u");
  json imported = Result(client().Post(
      P3() + "/skills/import",
      ImportBody(MakeZip({{"SKILL.md", Md("secret-runbook", "Restore the billing database")},
                          {"references/creds.md", "secret"}}),
                 owner)));
  const std::string id = imported["data"][0]["id"];
  const std::string path = P3() + "/skills/" + id;
  for (const std::string& query : {"?user_id=" + other, std::string("?user_id=")}) {
    SCOPED_TRACE(query);
    HttpResponse got = client().Get(path + query);
    EXPECT_TRUE(IsError(got, 404, "NotFound")) << got.Describe();
    EXPECT_EQ(got.body.find("secret"), std::string::npos);
    // The same answer as for an id that does not exist (but for the id).
    const std::string unknown_id = "s-00000000-0000-0000-0000-000000000000";
    std::string unknown =
        client().Get(P3() + "/skills/" + unknown_id + query).Json().value("message", "");
    ASSERT_NE(unknown.find(unknown_id), std::string::npos) << unknown;
    unknown.replace(unknown.find(unknown_id), unknown_id.size(), id);
    EXPECT_EQ(got.Json().value("message", ""), unknown);
    EXPECT_TRUE(IsError(client().Delete(path + query), 404, "NotFound"));
  }
  json mine = Result(client().Get(path + "?user_id=" + owner));
  EXPECT_EQ(mine["files"]["references/creds.md"], "secret");
  EXPECT_EQ(mine["user_id"], owner);
  json workspace_view = Result(client().Get(path));
  EXPECT_EQ(workspace_view["user_id"], owner);
  EXPECT_EQ(workspace_view["skill_id"], id);
  ASSERT_EQ(Search(client(), owner, "billing database").size(), 1u);
  EXPECT_TRUE(Result(client().Delete(path)).is_object());
  EXPECT_TRUE(IsError(client().Get(path + "?user_id=" + owner), 404, "NotFound"));
  EXPECT_TRUE(IsError(client().Get(path), 404, "NotFound"));
  EXPECT_TRUE(Search(client(), owner, "billing database").empty());
}

// Ten "lol"s, then levels of ten aliases of the level before: level n expands to 10^(n+1) nodes.
std::string AliasBombMd(int levels) {
  std::string s = "---\nname: bomb\ndescription: d\nmetadata:\n  l0: &l0 [lol";
  for (int i = 1; i < 10; ++i) s += ", lol";
  s += "]\n";
  for (int l = 1; l <= levels; ++l) {
    const std::string prev = "*l" + std::to_string(l - 1);
    s += "  l" + std::to_string(l) + ": &l" + std::to_string(l) + " [" + prev;
    for (int i = 1; i < 10; ++i) s += ", " + prev;
    s += "]\n";
  }
  return s + "---\nbody\n";
}

TEST_F(SkillApiTest, AliasBombsAndFifoEntriesAreRefusedAndTheServerStaysSmall) {
  const std::string user = UniqueId("u");
  const long rss_before = RssKib(server().pid());
  for (int levels : {6, 7}) {
    SCOPED_TRACE(levels);
    const auto start = std::chrono::steady_clock::now();
    HttpResponse r = client().Post(P3() + "/skills/import",
                                   ImportBody(MakeZip({{"SKILL.md", AliasBombMd(levels)}}), user));
    EXPECT_TRUE(IsError(r, 400, "InvalidParameter")) << r.Describe();
    EXPECT_NE(r.Json().value("message", "").find("YAML aliases"), std::string::npos) << r.body;
    EXPECT_LT(std::chrono::steady_clock::now() - start, 2s);
  }
  // The same front matter sent as a PUT's new SKILL.md.
  json imported = Result(
      client().Post(P3() + "/skills/import",
                    ImportBody(MakeZip({{"SKILL.md", Md("plain", "A plain skill")}}), user)));
  const std::string path = P3() + "/skills/" + imported["data"][0]["id"].get<std::string>();
  HttpResponse put = client().Request(
      "PUT", path, json{{"user_id", user}, {"files", {{"SKILL.md", AliasBombMd(7)}}}}.dump(), {});
  EXPECT_TRUE(IsError(put, 400, "InvalidParameter", "files.SKILL.md")) << put.Describe();

  HttpResponse fifo = client().Post(
      P3() + "/skills/import",
      ImportBody(
          MakeRawZip({{"SKILL.md", Md("piped", "A skill with a pipe")}, {"pipe", "", 0010644}}),
          user));
  EXPECT_TRUE(IsError(fifo, 400, "InvalidParameter")) << fifo.Describe();
  EXPECT_EQ(fifo.Json().value("message", ""),
            "archive entry pipe: FIFOs (named pipes) are not allowed");
  HttpResponse nul = client().Post(
      P3() + "/skills/import", ImportBody(MakeRawZip({{"SKILL.md", Md("nul", "A skill with a NUL")},
                                                      {std::string("a\0b.sh", 6), "echo"}}),
                                          user));
  EXPECT_TRUE(IsError(nul, 400, "InvalidParameter", "a?b.sh")) << nul.Describe();

  // Up, unchanged, and small: the expansion never happened.
  EXPECT_EQ(Result(client().Get(path + "?user_id=" + user))["version"], "1.0.0");
  // Nothing of the refused archives was stored: the user's only skill is the plain one.
  json hits = Search(client(), user, "bomb piped pipe nul plain");
  ASSERT_EQ(hits.size(), 1u) << hits.dump();
  EXPECT_EQ(hits[0]["name"], "plain");
  const long rss_after = RssKib(server().pid());
  if (rss_before > 0 && rss_after > 0 && !kAddressSanitizer) {
    EXPECT_LT(rss_after - rss_before, 100 * 1024);
  }
}

TEST_F(SkillApiTest, TaskListPagesTheWorkspacesTasksNewestFirst) {
  const std::string ws = UniqueWorkspace("tasks");
  std::vector<std::string> ids;
  for (const char* text :
       {"I like tea.", "1. Open the valve.\n2. Bleed the radiator.", "Nothing to learn here."}) {
    json add =
        Result(client().Post(P3(ws) + "/skills/add", json{{"user_id", "u"}, {"messages", text}}));
    ids.push_back(add.value("task_id", ""));
    std::this_thread::sleep_for(2ms);  // distinct creation times
  }
  json list;
  const auto deadline = std::chrono::steady_clock::now() + 30s;
  while (std::chrono::steady_clock::now() < deadline) {
    list = Result(client().Get(P3(ws) + "/skills/tasks"));
    bool done = list.is_object() && list["results"].size() == 3;
    for (const auto& t : done ? list["results"] : json::array()) {
      done = done && (t["status"] == "completed" || t["status"] == "failed");
    }
    if (done) break;
    std::this_thread::sleep_for(20ms);
  }
  ASSERT_EQ(list["total"], 3) << list.dump();
  EXPECT_EQ(list["page_number"], 1);
  EXPECT_EQ(list["page_size"], 20);
  ASSERT_EQ(list["results"].size(), 3u);
  EXPECT_EQ(list["results"][0]["task_id"], ids[2]);
  EXPECT_EQ(list["results"][2]["task_id"], ids[0]);
  EXPECT_EQ(list["results"][0]["status"], "completed");
  EXPECT_TRUE(HasFieldTypes(list["results"][1], {{"task_id", JsonType::kString},
                                                 {"status", JsonType::kString},
                                                 {"skill_ids", JsonType::kArray},
                                                 {"error_message", JsonType::kString},
                                                 {"created_at", JsonType::kString}}));
  json second = Result(client().Get(P3(ws) + "/skills/tasks?page_size=2&page_number=2"));
  ASSERT_EQ(second["results"].size(), 1u);
  EXPECT_EQ(second["results"][0]["task_id"], ids[0]);
  // Another workspace's tasks are not listed; bad paging names the parameter.
  EXPECT_EQ(Result(client().Get(P3(UniqueWorkspace("empty")) + "/skills/tasks"))["total"], 0);
  EXPECT_TRUE(IsError(client().Get(P3(ws) + "/skills/tasks?page_size=101"), 400, "InvalidParameter",
                      "page_size"));
  EXPECT_TRUE(IsError(client().Get(P3(ws) + "/skills/tasks?user_id=u"), 400, "InvalidParameter",
                      "user_id"));
}

TEST_F(SkillApiTest, ExtractsSkillsFromAConversation) {
  const std::string user = UniqueId("u");
  json add = Result(client().Post(
      P3() + "/skills/add",
      json{{"user_id", user},
           {"agent_id", "helper"},
           {"messages",
            {{{"role", "user"}, {"content", "How do I set up a Python virtual environment?"}},
             {{"role", "assistant"},
              {"content",
               "1. Run `python3 -m venv .venv`.\n2. Activate it with `source .venv/bin/activate`.\n"
               "3. Install packages with `pip install -r requirements.txt`."}},
             {{"role", "user"},
              {"content", "Thanks! Also, what's the best way to clear the DNS cache on macOS?"}},
             {{"role", "assistant"},
              {"content",
               "First, open Terminal. Then run `sudo dscacheutil -flushcache`. Finally, "
               "restart mDNSResponder with `sudo killall -HUP mDNSResponder`."}}}}}));
  const std::string task_id = add.value("task_id", "");
  ASSERT_EQ(task_id.rfind("st-", 0), 0u) << add.dump();
  json task = WaitTask(client(), task_id);
  ASSERT_EQ(task.value("status", ""), "completed") << task.dump();
  ASSERT_EQ(task["skill_ids"].size(), 2u) << task.dump();
  EXPECT_EQ(task["error_message"], "");
  EXPECT_TRUE(HasFieldTypes(task, {{"task_id", JsonType::kString},
                                   {"status", JsonType::kString},
                                   {"skill_ids", JsonType::kArray},
                                   {"error_message", JsonType::kString}}));

  json venv = Result(client().Get(P3() + "/skills/" + task["skill_ids"][0].get<std::string>() +
                                  "?user_id=" + user));
  EXPECT_EQ(venv["name"], "set-up-a-python-virtual-environment");
  EXPECT_EQ(venv["agent_id"], "helper");
  const std::string md = venv["files"]["SKILL.md"];
  EXPECT_EQ(md.rfind("---\nname: set-up-a-python-virtual-environment\n", 0), 0u) << md;
  EXPECT_NE(md.find("1. Run `python3 -m venv .venv`."), std::string::npos) << md;
  EXPECT_NE(md.find("3. Install packages"), std::string::npos) << md;

  json hits = Search(client(), user, "flush dns cache mac");
  ASSERT_FALSE(hits.empty());
  EXPECT_EQ(hits[0]["skill_id"], task["skill_ids"][1]);

  // Nothing procedural: completed without skills.
  json none =
      WaitTask(client(), Result(client().Post(P3() + "/skills/add",
                                              json{{"user_id", user}, {"messages", "I like tea."}}))
                             .value("task_id", ""));
  EXPECT_EQ(none.value("status", ""), "completed");
  EXPECT_TRUE(none["skill_ids"].empty());
}

TEST(SkillLimitsTest, ArchiveLimitsComeFromTheConfiguration) {
  ENGRAM_REQUIRE_BINARY();
  ServerProcess server(
      {.extra_args = {"--embedder", "none", "--retrieval", "bm25", "--skill-max-files", "2"}});
  ASSERT_TRUE(server.Start());
  HttpClient client(server.BaseUrl());
  const std::string user = UniqueId("u");
  HttpResponse r = client.Post(
      P3() + "/skills/import",
      ImportBody(MakeZip({{"SKILL.md", Md("a", "d")}, {"x.txt", "x"}, {"y.txt", "y"}}), user));
  EXPECT_TRUE(IsError(r, 400, "InvalidParameter")) << r.Describe();
  EXPECT_NE(r.Json().value("message", "").find("more than 2 files"), std::string::npos) << r.body;
  json ok =
      Result(client.Post(P3() + "/skills/import",
                         ImportBody(MakeZip({{"SKILL.md", Md("a", "d")}, {"x.txt", "x"}}), user)));
  EXPECT_EQ(ok.value("imported_count", 0), 1);
}

TEST(SkillLlmTest, ExtractsThroughTheEndpointFailsCleanlyAndResumesAfterKill) {
  ENGRAM_REQUIRE_BINARY();
  PythonFake llm("fake_llm.py");
  if (llm.port() == 0) GTEST_SKIP() << "python3 or tests/support/fake_llm.py not available";
  ServerProcess server(
      {.extra_args = {"--extractor", "llm", "--llm-url", llm.Url("/v1"), "--llm-model", "fake",
                      "--llm-retries", "0", "--llm-timeout-ms", "20000"}});
  ASSERT_TRUE(server.Start());
  HttpClient client(server.BaseUrl());
  const std::string user = UniqueId("u");
  auto add = [&](const std::string& request, const std::string& answer) {
    json r = Result(
        client.Post(P3() + "/skills/add", json{{"user_id", user},
                                               {"messages",
                                                {{{"role", "user"}, {"content", request}},
                                                 {{"role", "assistant"}, {"content", answer}}}}}));
    return r.value("task_id", "");
  };

  json ok = WaitTask(client, add("Bake sourdough bread please", "1. Mix.\n2. Bake."));
  ASSERT_EQ(ok.value("status", ""), "completed") << ok.dump();
  ASSERT_EQ(ok["skill_ids"].size(), 1u);
  json skill = Result(
      client.Get(P3() + "/skills/" + ok["skill_ids"][0].get<std::string>() + "?user_id=" + user));
  EXPECT_EQ(skill["name"], "llm-bake-sourdough-bread-please");
  EXPECT_NE(skill["files"]["SKILL.md"].get<std::string>().find("2. Bake."), std::string::npos);

  json bad = WaitTask(client, add("FAKE_LLM_MALFORMED", "1. x"));
  ASSERT_EQ(bad.value("status", ""), "failed") << bad.dump();
  EXPECT_NE(bad.value("error_message", "").find("malformed skill output"), std::string::npos);

  // A slow extraction killed mid-way is still pending after the restart, and then completes.
  const std::string slow = add("FAKE_LLM_SLOW brew coffee", "1. Grind.\n2. Brew.");
  std::this_thread::sleep_for(300ms);
  server.KeepDataDir(true);
  server.Kill();
  ASSERT_TRUE(server.Restart());
  server.KeepDataDir(false);
  client.set_base_url(server.BaseUrl());
  json resumed = WaitTask(client, slow);
  ASSERT_EQ(resumed.value("status", ""), "completed") << resumed.dump();
  ASSERT_EQ(resumed["skill_ids"].size(), 1u);
  EXPECT_EQ(Search(client, user, "brew coffee grind")[0]["skill_id"], resumed["skill_ids"][0]);
}

}  // namespace
}  // namespace engram::testing
