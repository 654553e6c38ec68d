// Knowledge bases (docs/api/README.md "Knowledge bases (V3, envelope)") against a real server: real
// documents of every format written by the test, upload → SUCCESS → content → search → delete,
// re-upload, pagination, restart, and hostile inputs that must end as FAIL or 400, never a crash
// or a hang.
#include <signal.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <thread>

#include "common/codec.h"
#include "python_fake.h"
#include "test_documents.h"
#include "test_util.h"

namespace engram::testing {
namespace {

using nlohmann::json;
using namespace std::chrono_literals;
namespace fs = std::filesystem;

std::string Kb(std::string_view kb_id, std::string_view workspace = "default") {
  return "/v3/openapi/workspaces/" + std::string(workspace) +
         "/memory/agentic-memory/knowledge-bases/" + std::string(kb_id);
}

// One import directory per test binary, with a sibling directory outside it.
const fs::path& ImportRoot() {
  static const fs::path root = [] {
    char templ[] = "/tmp/engram-kb-test-XXXXXX";
    if (mkdtemp(templ) == nullptr) std::abort();
    fs::create_directories(fs::path(templ) / "import");
    fs::create_directories(fs::path(templ) / "outside");
    return fs::path(templ);
  }();
  return root;
}
fs::path ImportDir() { return ImportRoot() / "import"; }

void WriteFile(const fs::path& p, const std::string& bytes) {
  std::ofstream out(p, std::ios::binary);
  out << bytes;
}

class KbApiTest : public SharedServerTest {
 protected:
  ServerOptions Options() const override {
    ServerOptions o;
    o.extra_args = {"--import-dir",        ImportDir().string(),
                    "--kb-chunk-size",     "400",
                    "--kb-chunk-overlap",  "60",
                    "--kb-max-doc-bytes",  std::to_string(8 << 20),
                    "--kb-pdf-timeout-ms", "10000"};
    return o;
  }
  static void TearDownTestSuite() {
    SharedServerTest::TearDownTestSuite();
    std::error_code ec;
    fs::remove_all(ImportRoot(), ec);
  }

  // Uploads; returns the response body's result (expects 200 and PROCESSING).
  std::string Upload(const std::string& kb, json doc, const std::string& type = "LOCAL") {
    HttpResponse r = client().Post(Kb(kb) + "/docs", json{{"type", type}, {"doc", doc}});
    EXPECT_EQ(r.status, 200) << r.Describe();
    json j = r.Json();
    EXPECT_EQ(j.value("status", ""), "OK") << r.body;
    EXPECT_EQ(j["result"].value("status", ""), "PROCESSING") << r.body;
    return j["result"].value("id", "");
  }

  // Polls the document until it leaves PROCESSING (or 30 s pass); returns its result object.
  json Wait(const std::string& kb, const std::string& id) {
    json last;
    const auto deadline = std::chrono::steady_clock::now() + 30s;
    while (std::chrono::steady_clock::now() < deadline) {
      HttpResponse r = client().Get(Kb(kb) + "/docs/" + id);
      if (r.status != 200) {
        ADD_FAILURE() << "document poll: " << r.Describe();
        return json();
      }
      last = r.Json()["result"];
      if (last.value("status", "") != "PROCESSING") return last;
      std::this_thread::sleep_for(30ms);
    }
    ADD_FAILURE() << "document " << id << " still PROCESSING: " << last.dump();
    return last;
  }

  json UploadAndWait(const std::string& kb, const std::string& file_url, const std::string& title,
                     const std::string& id = "") {
    json doc = {{"title", title}, {"file_url", file_url}};
    if (!id.empty()) doc["id"] = id;
    std::string got = Upload(kb, doc);
    if (!id.empty()) {
      EXPECT_EQ(got, id);
    }
    return Wait(kb, got);
  }

  json Search(const std::string& kb, const std::string& query, int top_k = 5) {
    HttpResponse r = client().Post(Kb(kb) + "/search", json{{"query", query}, {"top_k", top_k}});
    EXPECT_EQ(r.status, 200) << r.Describe();
    json j = r.Json();
    if (!j.contains("result") || !j["result"].contains("results")) return json::array();
    return j["result"]["results"];
  }

  // Doc ids of the hits whose chunk contains `word` (vector search also returns related chunks).
  std::vector<std::string> DocsContaining(const std::string& kb, const std::string& word) {
    std::vector<std::string> ids;
    for (const auto& h : Search(kb, word, 20)) {
      if (h.value("chunk", "").find(word) != std::string::npos)
        ids.push_back(h.value("doc_id", ""));
    }
    return ids;
  }

  // Uploads a file that must FAIL; returns its error_message.
  std::string ExpectFail(const std::string& kb, const std::string& file_url) {
    json doc = Wait(kb, Upload(kb, {{"title", "hostile"}, {"file_url", file_url}}));
    EXPECT_EQ(doc.value("status", ""), "FAIL") << doc.dump();
    EXPECT_FALSE(doc.value("error_message", "").empty()) << doc.dump();
    EXPECT_EQ(doc.value("content", "x"), "") << doc.dump();
    return doc.value("error_message", "");
  }
};

TEST_F(KbApiTest, MarkdownUploadGetSearchDeleteRoundTrip) {
  ENGRAM_REQUIRE_BINARY();
  const std::string kb = UniqueId("kb");
  const std::string w1 = UniqueWord(), w2 = UniqueWord();
  std::string md = "# Installation\n\nRun the installer and accept the " + w1 + " licence.\n\n";
  for (int i = 0; i < 20; ++i)
    md += "Filler paragraph number " + std::to_string(i) + " about nothing much.\n\n";
  md += "# Troubleshooting\n\nIf the screen flickers, reset the " + w2 + " module.\n";
  WriteFile(ImportDir() / "guide.md", md);

  json doc = UploadAndWait(kb, "guide.md", "User guide", "guide-1");
  ASSERT_EQ(doc.value("status", ""), "SUCCESS") << doc.dump();
  EXPECT_EQ(doc.value("id", ""), "guide-1");
  EXPECT_EQ(doc.value("title", ""), "User guide");
  EXPECT_EQ(doc.value("error_message", "x"), "");
  EXPECT_NE(doc.value("content", "").find("reset the " + w2 + " module"), std::string::npos)
      << doc.dump();
  EXPECT_EQ(doc.value("timestamp", "").back(), 'Z');

  json hits = Search(kb, "how do I reset the " + w2);
  ASSERT_FALSE(hits.empty());
  EXPECT_EQ(hits[0].value("doc_id", ""), "guide-1");
  EXPECT_EQ(hits[0].value("title", ""), "User guide");
  EXPECT_NE(hits[0].value("chunk", "").find(w2), std::string::npos) << hits.dump();
  // Chunked by structure: the troubleshooting chunk does not carry the installation section.
  EXPECT_EQ(hits[0].value("chunk", "").find(w1), std::string::npos) << hits.dump();
  EXPECT_GT(hits[0].value("score", 0.0), 0.0);
  EXPECT_FALSE(hits[0].contains("explain")) << "only when asked";
  HttpResponse explained = client().Post(
      Kb(kb) + "/search", json{{"query", "how do I reset the " + w2}, {"explain", true}});
  ASSERT_EQ(explained.status, 200) << explained.Describe();
  const json top = explained.Json()["result"]["results"][0];
  EXPECT_EQ(top["doc_id"], "guide-1");
  const json& fusion = top["explain"]["fusion"];
  EXPECT_GT(fusion["bm25"]["score"].get<double>(), 0.0) << top.dump();
  EXPECT_GT(fusion["bm25"]["part"].get<double>(), 0.0) << top.dump();
  EXPECT_EQ(fusion["score"], top["score"]);
  EXPECT_EQ(top["explain"]["ranked_score"], top["score"]);

  HttpResponse list = client().Get(Kb(kb) + "/docs");
  ASSERT_EQ(list.status, 200) << list.Describe();
  EXPECT_EQ(list.Json()["result"].value("total", 0), 1);
  EXPECT_EQ(list.Json()["result"]["results"][0].value("status", ""), "SUCCESS");

  HttpResponse del = client().Delete(Kb(kb) + "/docs/guide-1");
  ASSERT_EQ(del.status, 200) << del.Describe();
  EXPECT_EQ(del.Json()["result"], (json{{"id", "guide-1"}, {"error_message", ""}}));
  EXPECT_TRUE(IsError(client().Get(Kb(kb) + "/docs/guide-1"), 404, "NotFound"));
  EXPECT_TRUE(IsError(client().Delete(Kb(kb) + "/docs/guide-1"), 404, "NotFound"));
  EXPECT_TRUE(Search(kb, w2).empty());
  EXPECT_TRUE(Search(kb, w1).empty());
}

TEST_F(KbApiTest, ADocumentUploadedByContentIsIngestedLikeAFile) {
  ENGRAM_REQUIRE_BINARY();
  const std::string kb = UniqueId("kb");
  const std::string word = UniqueWord();
  const auto upload = [&](const json& doc) {
    return client().Post(Kb(kb) + "/docs", json{{"type", "CONTENT"}, {"doc", doc}});
  };
  // A Word file, sent from a browser's file picker: the type comes from the bytes.
  HttpResponse r =
      upload({{"id", "memo-1"},
              {"title", "Memo"},
              {"file_name", "memo.docx"},
              {"content_base64", Base64Encode(MakeDocx({"The vault code is " + word}))}});
  ASSERT_EQ(r.status, 200) << r.Describe();
  EXPECT_EQ(r.Json()["result"]["status"], "PROCESSING");
  json doc = Wait(kb, "memo-1");
  ASSERT_EQ(doc.value("status", ""), "SUCCESS") << doc.dump();
  EXPECT_NE(doc.value("content", "").find(word), std::string::npos) << doc.dump();
  json hits = Search(kb, "vault code " + word);
  ASSERT_FALSE(hits.empty());
  EXPECT_EQ(hits[0].value("doc_id", ""), "memo-1");

  // Refused at once, naming the field, storing nothing.
  const std::string ok = Base64Encode("text");
  struct Case {
    json doc;
    std::string field;
  };
  const std::vector<Case> cases = {
      {{{"title", "t"}, {"content_base64", ok}}, "doc.file_name"},
      {{{"title", "t"}, {"file_name", "a/b.txt"}, {"content_base64", ok}}, "doc.file_name"},
      {{{"title", "t"}, {"file_name", "a.txt"}}, "doc.content_base64"},
      {{{"title", "t"}, {"file_name", "a.txt"}, {"content_base64", "not base64!"}},
       "doc.content_base64"},
      {{{"title", "t"}, {"file_name", "a.txt"}, {"content_base64", ""}}, "doc.content_base64"},
      {{{"title", "t"}, {"file_name", "a.txt"}, {"content_base64", 7}}, "doc.content_base64"},
      // --kb-max-doc-bytes is 8 MiB on this server.
      {{{"title", "t"},
        {"file_name", "a.txt"},
        {"content_base64", Base64Encode(std::string((8 << 20) + 1, 'a'))}},
       "--kb-max-doc-bytes"},
  };
  for (const Case& c : cases) {
    json doc = c.doc;
    doc["id"] = "refused";
    EXPECT_TRUE(IsError(upload(doc), 400, "InvalidParameter", c.field)) << c.field;
  }
  EXPECT_TRUE(IsError(client().Get(Kb(kb) + "/docs/refused"), 404, "NotFound"));
}

TEST_F(KbApiTest, EveryFormatIsExtractedAndFound) {
  ENGRAM_REQUIRE_BINARY();
  const std::string kb = UniqueId("kb");
  struct Case {
    std::string file;
    std::string bytes;
    std::string word;
  };
  std::vector<Case> cases;
  auto add = [&](const std::string& file, auto make) {
    const std::string w = UniqueWord();
    cases.push_back({file, make(w), w});
  };
  add("notes.txt", [](const std::string& w) { return "Plain notes mention " + w + " once.\n"; });
  add("page.html", [](const std::string& w) {
    return "<!DOCTYPE html><html><head><script>var " + UniqueWord() +
           " = 1;</script></head><body><h1>Page</h1><p>The <b>" + w +
           "</b> appears here.</p></body></html>";
  });
  add("table.csv",
      [](const std::string& w) { return "name,colour\nwidget," + w + "\ngadget,blue\n"; });
  add("data.json", [](const std::string& w) {
    return json{{"project", {{"codename", w}, {"size", 3}}}}.dump();
  });
  add("report.docx", [](const std::string& w) {
    return MakeDocx({"# Summary", "The quarterly " + w + " figures were strong."});
  });
  add("paper.pdf", [](const std::string& w) {
    return MakePdf({"Abstract", "We study " + w + " in depth."});
  });
  // Type from content: a PDF named .txt is still a PDF.
  add("misnamed.txt", [](const std::string& w) { return MakePdf({"Hidden " + w + " inside."}); });
  for (const Case& c : cases) WriteFile(ImportDir() / c.file, c.bytes);

  for (size_t i = 0; i < cases.size(); ++i) {
    const Case& c = cases[i];
    // Relative paths, absolute paths inside the directory and file:// URLs all work.
    const std::string url = i % 3 == 0   ? c.file
                            : i % 3 == 1 ? (ImportDir() / c.file).string()
                                         : "file://" + (ImportDir() / c.file).string();
    json doc = UploadAndWait(kb, url, "Doc " + c.file, "doc-" + std::to_string(i));
    ASSERT_EQ(doc.value("status", ""), "SUCCESS") << c.file << ": " << doc.dump();
    EXPECT_NE(doc.value("content", "").find(c.word), std::string::npos)
        << c.file << ": " << doc.dump();
  }
  // The chunk holding each word is found (a made-up word's vector is noise, so fusion may rank a
  // neighbour above it in a knowledge base this small; the lexical match must be there).
  for (size_t i = 0; i < cases.size(); ++i) {
    EXPECT_EQ(DocsContaining(kb, cases[i].word),
              std::vector<std::string>{"doc-" + std::to_string(i)})
        << cases[i].file;
  }
  // The HTML's script never became text.
  json page = Wait(kb, "doc-1");
  EXPECT_EQ(page.value("content", "").find("var "), std::string::npos) << page.dump();
}

TEST_F(KbApiTest, GeneratedIdsAndReuploadReplacesTheOldVersion) {
  ENGRAM_REQUIRE_BINARY();
  const std::string kb = UniqueId("kb");
  const std::string old_word = UniqueWord(), new_word = UniqueWord();
  WriteFile(ImportDir() / "v1.txt", "Version one talks about " + old_word + ".");
  WriteFile(ImportDir() / "v2.txt", "Version two talks about " + new_word + ".");
  const std::string generated = Upload(kb, {{"title", "auto"}, {"file_url", "v1.txt"}});
  EXPECT_EQ(generated.rfind("d-", 0), 0u) << generated;
  EXPECT_EQ(generated.size(), 38u) << generated;
  ASSERT_EQ(Wait(kb, generated).value("status", ""), "SUCCESS");

  ASSERT_EQ(UploadAndWait(kb, "v1.txt", "Versioned", "same").value("status", ""), "SUCCESS");
  ASSERT_EQ(DocsContaining(kb, old_word).size(), 2u);
  json doc = UploadAndWait(kb, "v2.txt", "Versioned v2", "same");
  ASSERT_EQ(doc.value("status", ""), "SUCCESS");
  EXPECT_EQ(doc.value("title", ""), "Versioned v2");
  EXPECT_EQ(DocsContaining(kb, old_word), std::vector<std::string>{generated});
  EXPECT_EQ(DocsContaining(kb, new_word), std::vector<std::string>{"same"});
  EXPECT_EQ(client().Get(Kb(kb) + "/docs").Json()["result"].value("total", 0), 2);
}

TEST_F(KbApiTest, ListPaginatesNewestFirst) {
  ENGRAM_REQUIRE_BINARY();
  const std::string kb = UniqueId("kb");
  WriteFile(ImportDir() / "p.txt", "paged document");
  for (int i = 0; i < 3; ++i) {
    ASSERT_EQ(UploadAndWait(kb, "p.txt", "P" + std::to_string(i), "p" + std::to_string(i))
                  .value("status", ""),
              "SUCCESS");
  }
  json page1 = client().Get(Kb(kb) + "/docs?page_number=1&page_size=2").Json()["result"];
  EXPECT_EQ(page1.value("total", 0), 3);
  ASSERT_EQ(page1["results"].size(), 2u);
  EXPECT_EQ(page1["results"][0].value("id", ""), "p2");
  for (const char* key : {"id", "title", "timestamp", "status"}) {
    EXPECT_TRUE(page1["results"][0].contains(key)) << key;
  }
  EXPECT_FALSE(page1["results"][0].contains("content"));
  json page2 = client().Get(Kb(kb) + "/docs?page_number=2&page_size=2").Json()["result"];
  ASSERT_EQ(page2["results"].size(), 1u);
  EXPECT_EQ(page2["results"][0].value("id", ""), "p0");
  EXPECT_TRUE(
      IsError(client().Get(Kb(kb) + "/docs?page_size=101"), 400, "InvalidParameter", "page_size"));
  EXPECT_TRUE(IsError(client().Get(Kb(kb) + "/docs?page_number=0"), 400, "InvalidParameter",
                      "page_number"));
  // Knowledge bases and workspaces are isolated.
  EXPECT_EQ(client().Get(Kb(UniqueId("kb")) + "/docs").Json()["result"].value("total", -1), 0);
  EXPECT_EQ(client().Get(Kb(kb, "other-ws") + "/docs").Json()["result"].value("total", -1), 0);
}

TEST_F(KbApiTest, KnowledgeBasesAreListedWithTheirDocumentsByStatus) {
  ENGRAM_REQUIRE_BINARY();
  const std::string ws = UniqueWorkspace("kbs");
  const std::string list =
      "/v3/openapi/workspaces/" + ws + "/memory/agentic-memory/knowledge-bases";
  EXPECT_EQ(client().Get(list).Json()["result"]["total"], 0);
  WriteFile(ImportDir() / "listed.txt", "a listed document");
  auto upload = [&](const std::string& kb, const std::string& id, const std::string& file) {
    HttpResponse r = client().Post(
        Kb(kb, ws) + "/docs",
        json{{"type", "LOCAL"}, {"doc", {{"id", id}, {"title", id}, {"file_url", file}}}});
    ASSERT_EQ(r.status, 200) << r.Describe();
  };
  upload("manuals", "m1", "listed.txt");
  upload("manuals", "m2", "no-such-file.txt");
  upload("faq", "f1", "listed.txt");
  json result;
  const auto deadline = std::chrono::steady_clock::now() + 30s;
  while (std::chrono::steady_clock::now() < deadline) {
    result = client().Get(list).Json()["result"];
    int processing = 0;
    for (const auto& k : result["results"]) processing += k.value("processing", 1);
    if (result["results"].size() == 2 && processing == 0) break;
    std::this_thread::sleep_for(30ms);
  }
  ASSERT_EQ(result["total"], 2) << result.dump();
  EXPECT_EQ(result["page_size"], 20);
  ASSERT_EQ(result["results"].size(), 2u);
  const json& faq = result["results"][0];
  const json& manuals = result["results"][1];
  EXPECT_EQ(faq["kb_id"], "faq");
  EXPECT_EQ(faq["documents"], 1);
  EXPECT_EQ(faq["failed"], 0);
  EXPECT_EQ(manuals["kb_id"], "manuals");
  EXPECT_EQ(manuals["documents"], 2);
  EXPECT_EQ(manuals["processing"], 0);
  EXPECT_EQ(manuals["failed"], 1) << manuals.dump();
  EXPECT_TRUE(manuals["updated_at"].is_string());
  json second = client().Get(list + "?page_size=1&page_number=2").Json()["result"];
  ASSERT_EQ(second["results"].size(), 1u);
  EXPECT_EQ(second["results"][0]["kb_id"], "manuals");
  EXPECT_TRUE(IsError(client().Get(list + "?page_size=0"), 400, "InvalidParameter", "page_size"));
  EXPECT_TRUE(IsError(client().Get(list + "?kb_id=faq"), 400, "InvalidParameter", "kb_id"));
}

TEST_F(KbApiTest, InvalidRequestsAre400WithPreciseMessages) {
  ENGRAM_REQUIRE_BINARY();
  const std::string kb = UniqueId("kb");
  auto post = [&](const json& body) { return client().Post(Kb(kb) + "/docs", body); };
  EXPECT_TRUE(IsError(post({{"doc", {{"title", "t"}, {"file_url", "a.txt"}}}}), 400,
                      "InvalidParameter", "type"));
  EXPECT_TRUE(IsError(post({{"type", "S3"}, {"doc", {{"title", "t"}, {"file_url", "a.txt"}}}}), 400,
                      "InvalidParameter", "type"));
  EXPECT_TRUE(IsError(post({{"type", "LOCAL"}}), 400, "InvalidParameter", "doc"));
  EXPECT_TRUE(IsError(post({{"type", "LOCAL"}, {"doc", {{"file_url", "a.txt"}}}}), 400,
                      "InvalidParameter", "doc.title"));
  EXPECT_TRUE(IsError(post({{"type", "LOCAL"}, {"doc", {{"title", "t"}}}}), 400, "InvalidParameter",
                      "doc.file_url"));
  EXPECT_TRUE(IsError(
      post({{"type", "LOCAL"}, {"doc", {{"id", "a/b"}, {"title", "t"}, {"file_url", "x"}}}}), 400,
      "InvalidParameter", "doc.id"));
  EXPECT_TRUE(IsError(client().Post(Kb(kb) + "/docs", std::string_view("{not json")), 400,
                      "InvalidParameter"));
  // Sources that can never be read are refused at once.
  EXPECT_TRUE(
      IsError(post({{"type", "OSS"}, {"doc", {{"title", "t"}, {"file_url", "oss://b/k.txt"}}}}),
              400, "InvalidParameter", "oss"));
  EXPECT_TRUE(IsError(post({{"type", "LOCAL"},
                            {"doc", {{"title", "t"}, {"file_url", "https://example.com/a.txt"}}}}),
                      400, "InvalidParameter", "remote fetch"));
  EXPECT_TRUE(IsError(
      post({{"type", "LOCAL"}, {"doc", {{"title", "t"}, {"file_url", "../outside/x.txt"}}}}), 400,
      "InvalidParameter", ".."));
  EXPECT_TRUE(
      IsError(post({{"type", "LOCAL"}, {"doc", {{"title", "t"}, {"file_url", "/etc/passwd"}}}}),
              400, "InvalidParameter", "import directory"));
  EXPECT_TRUE(IsError(
      post({{"type", "LOCAL"}, {"doc", {{"title", "t"}, {"file_url", "file:///etc/passwd"}}}}), 400,
      "InvalidParameter", "import directory"));
  EXPECT_TRUE(
      IsError(post({{"type", "LOCAL"}, {"doc", {{"title", "t"}, {"file_url", "gopher://x/y"}}}}),
              400, "InvalidParameter", "scheme"));
  EXPECT_TRUE(IsError(client().Post(Kb(kb) + "/search", json{{"top_k", 3}}), 400,
                      "InvalidParameter", "query"));
  EXPECT_TRUE(IsError(client().Post(Kb(kb) + "/search", json{{"query", "x"}, {"top_k", 0}}), 400,
                      "InvalidParameter", "top_k"));
  EXPECT_TRUE(IsError(client().Post(Kb(kb) + "/search", json{{"query", "x"}, {"explain", "on"}}),
                      400, "InvalidParameter", "explain"));
  EXPECT_TRUE(IsError(client().Get(Kb(kb) + "/docs/unknown"), 404, "NotFound"));
  EXPECT_TRUE(
      IsError(client().Get("/v3/openapi/workspaces/default/memory/other/knowledge-bases/k/docs"),
              400, "ServiceIdNotExist"));
}

TEST_F(KbApiTest, HostileDocumentsFailWithoutHarm) {
  ENGRAM_REQUIRE_BINARY();
  const std::string kb = UniqueId("kb");
  WriteFile(ImportRoot() / "outside" / "secret.txt", "top secret outside text");
  std::error_code ec;
  fs::create_symlink(ImportRoot() / "outside" / "secret.txt", ImportDir() / "escape.txt", ec);
  fs::create_directory_symlink(ImportRoot() / "outside", ImportDir() / "escape-dir", ec);
  EXPECT_NE(ExpectFail(kb, "escape.txt").find("outside the import directory"), std::string::npos);
  EXPECT_NE(ExpectFail(kb, "escape-dir/secret.txt").find("outside the import directory"),
            std::string::npos);

  // A 2 GB sparse file fails at once as too large; it is never read.
  const fs::path big = ImportDir() / "huge.txt";
  WriteFile(big, "");
  ASSERT_EQ(truncate(big.c_str(), 2LL << 30), 0);
  const auto start = std::chrono::steady_clock::now();
  EXPECT_NE(ExpectFail(kb, "huge.txt").find("too large"), std::string::npos);
  EXPECT_LT(std::chrono::steady_clock::now() - start, 10s);
  fs::remove(big, ec);

  WriteFile(ImportDir() / "corrupt.pdf",
            "%PDF-1.7\n1 0 obj << /Type /Catalog >> garbage \x01\x02\x03 %%EOF");
  EXPECT_NE(ExpectFail(kb, "corrupt.pdf").find("PDF"), std::string::npos);

  WriteFile(ImportDir() / "bomb.docx", MakeDocxBomb(200u << 20));
  EXPECT_NE(ExpectFail(kb, "bomb.docx").find("too large"), std::string::npos);

  WriteFile(ImportDir() / "image.png", TinyPngBytes());
  EXPECT_NE(ExpectFail(kb, "image.png").find("unsupported"), std::string::npos);
  WriteFile(ImportDir() / "fake.docx", "not a zip at all");
  ExpectFail(kb, "fake.docx");
  ExpectFail(kb, "does-not-exist.txt");
  ExpectFail(kb, ".");  // a directory

  // External entities are never resolved: the page's own text is kept, the file is not read.
  WriteFile(ImportDir() / "xxe.html",
            "<!DOCTYPE html [<!ENTITY xxe SYSTEM \"file://" +
                (ImportRoot() / "outside" / "secret.txt").string() +
                "\">]><html><body><p>visible &xxe; words</p></body></html>");
  json doc = UploadAndWait(kb, "xxe.html", "xxe");
  ASSERT_EQ(doc.value("status", ""), "SUCCESS") << doc.dump();
  EXPECT_NE(doc.value("content", "").find("visible"), std::string::npos);
  EXPECT_EQ(doc.value("content", "").find("secret"), std::string::npos) << doc.dump();

  // Nothing of the hostile uploads is searchable, and the server is fine.
  EXPECT_TRUE(DocsContaining(kb, "secret").empty());
  EXPECT_EQ(client().Get("/healthz").status, 200);
}

TEST(KbRestartTest, DocumentsAndChunksSurviveARestart) {
  ENGRAM_REQUIRE_BINARY();
  char templ[] = "/tmp/engram-kb-restart-XXXXXX";
  ASSERT_NE(mkdtemp(templ), nullptr);
  const fs::path dir = templ;
  const std::string word = UniqueWord();
  WriteFile(dir / "keep.txt", "Durable knowledge about " + word + ".");
  ServerProcess server(
      {.extra_args = {"--import-dir", dir.string(), "--embedder", "none", "--retrieval", "bm25"}});
  ASSERT_TRUE(server.Start());
  HttpClient client(server.BaseUrl());
  HttpResponse r =
      client.Post(Kb("kb-restart") + "/docs",
                  json{{"type", "LOCAL"},
                       {"doc", {{"id", "k1"}, {"title", "Keep"}, {"file_url", "keep.txt"}}}});
  ASSERT_EQ(r.status, 200) << r.Describe();
  ASSERT_TRUE(server.Restart());
  client.set_base_url(server.BaseUrl());
  json doc;
  for (int i = 0; i < 300; ++i) {
    doc = client.Get(Kb("kb-restart") + "/docs/k1").Json()["result"];
    if (doc.value("status", "") != "PROCESSING") break;
    std::this_thread::sleep_for(30ms);
  }
  ASSERT_EQ(doc.value("status", ""), "SUCCESS") << doc.dump();
  ASSERT_TRUE(server.Restart());
  client.set_base_url(server.BaseUrl());
  json hits =
      client.Post(Kb("kb-restart") + "/search", json{{"query", word}}).Json()["result"]["results"];
  ASSERT_EQ(hits.size(), 1u) << hits.dump();
  EXPECT_EQ(hits[0].value("doc_id", ""), "k1");
  server.Stop();
  std::error_code ec;
  fs::remove_all(dir, ec);
}

// A key limited to one workspace reads LOCAL documents only from that workspace's directory
// (--import-dir-layout auto, with workspace-limited keys): a file put there for another workspace
// stays unreadable, whatever path names it.
// Documents uploaded by content and acknowledged survive kill -9, wherever their ingestion was:
// the bytes are in the store with the document, and the restarted server runs what was left.
TEST(KbRestartTest, ContentUploadsSurviveKill9) {
  ENGRAM_REQUIRE_BINARY();
  ServerProcess server({.extra_args = {"--embedder", "none", "--retrieval", "bm25"}});
  ASSERT_TRUE(server.Start());
  HttpClient client(server.BaseUrl());
  constexpr int kDocs = 40;
  std::vector<std::string> words;
  std::string filler;
  for (int i = 0; i < 4000; ++i) filler += "Paragraph " + std::to_string(i) + " of filler.\n\n";
  for (int i = 0; i < kDocs; ++i) {
    words.push_back(UniqueWord());
    const std::string text = "# Doc\n\nThe keyword is " + words.back() + ".\n\n" + filler;
    HttpResponse r =
        client.Post(Kb("kb-kill") + "/docs", json{{"type", "CONTENT"},
                                                  {"doc",
                                                   {{"id", "c" + std::to_string(i)},
                                                    {"title", "Doc"},
                                                    {"file_name", "doc.md"},
                                                    {"content_base64", Base64Encode(text)}}}});
    ASSERT_EQ(r.status, 200) << r.Describe();
  }
  server.Kill();
  ASSERT_TRUE(server.Restart());
  client.set_base_url(server.BaseUrl());
  for (int i = 0; i < kDocs; ++i) {
    const std::string path = Kb("kb-kill") + "/docs/c" + std::to_string(i);
    json doc;
    for (int t = 0; t < 1000; ++t) {
      doc = client.Get(path).Json()["result"];
      if (doc.value("status", "") != "PROCESSING") break;
      std::this_thread::sleep_for(30ms);
    }
    ASSERT_EQ(doc.value("status", ""), "SUCCESS") << i << " " << doc.dump();
    json hits = client.Post(Kb("kb-kill") + "/search", json{{"query", words[i]}, {"top_k", 1}})
                    .Json()["result"]["results"];
    ASSERT_EQ(hits.size(), 1u) << i;
    EXPECT_EQ(hits[0].value("doc_id", ""), "c" + std::to_string(i));
  }
}

TEST(KbImportDirTest, AWorkspaceLimitedKeyReadsOnlyItsWorkspacesDirectory) {
  ENGRAM_REQUIRE_BINARY();
  char templ[] = "/tmp/engram-kb-import-XXXXXX";
  ASSERT_NE(mkdtemp(templ), nullptr);
  const fs::path dir = templ;
  fs::create_directories(dir / "alpha");
  fs::create_directories(dir / "beta");
  const std::string secret = UniqueWord();
  WriteFile(dir / "alpha" / "plan.txt", "Alpha's plan mentions " + secret + ".");
  WriteFile(dir / "shared.txt", "At the shared root: " + secret + ".");
  ServerProcess server(
      {.extra_args = {"--import-dir", dir.string(), "--api-key", "key-a:alpha", "--api-key",
                      "key-b:beta", "--embedder", "none", "--retrieval", "bm25"}});
  ASSERT_TRUE(server.Start());
  HttpClient client(server.BaseUrl());
  auto upload = [&](const std::string& ws, const std::string& key, const std::string& id,
                    const std::string& url) {
    return client.Post(
        Kb("kb", ws) + "/docs",
        json{{"type", "LOCAL"}, {"doc", {{"id", id}, {"title", id}, {"file_url", url}}}},
        Headers{{"Authorization", "Bearer " + key}});
  };
  auto status_of = [&](const std::string& ws, const std::string& key, const std::string& id) {
    json doc;
    for (int i = 0; i < 300; ++i) {
      doc = client.Get(Kb("kb", ws) + "/docs/" + id, {{"Authorization", "Bearer " + key}})
                .Json()["result"];
      if (doc.value("status", "") != "PROCESSING") break;
      std::this_thread::sleep_for(30ms);
    }
    return doc.value("status", "");
  };
  HttpResponse own = upload("alpha", "key-a", "own", "plan.txt");
  ASSERT_EQ(own.status, 200) << own.Describe();
  EXPECT_EQ(status_of("alpha", "key-a", "own"), "SUCCESS");
  // Workspace beta, by every name of alpha's file and of the shared root's.
  for (const std::string& url :
       {std::string("plan.txt"), std::string("alpha/plan.txt"), (dir / "alpha/plan.txt").string(),
        "file://" + (dir / "alpha/plan.txt").string(), std::string("shared.txt"),
        (dir / "shared.txt").string()}) {
    const std::string id = "d" + std::to_string(std::hash<std::string>{}(url) % 100000);
    HttpResponse r = upload("beta", "key-b", id, url);
    if (r.status == 200) {
      EXPECT_EQ(status_of("beta", "key-b", id), "FAIL") << url;
    } else {
      EXPECT_EQ(r.status, 400) << url << ": " << r.Describe();
    }
  }
  HttpResponse hits = client.Post(Kb("kb", "beta") + "/search", json{{"query", secret}},
                                  Headers{{"Authorization", "Bearer key-b"}});
  if (hits.status != 404) {  // no document of beta's reached SUCCESS
    ASSERT_EQ(hits.status, 200) << hits.Describe();
    EXPECT_TRUE(hits.Json()["result"]["results"].empty()) << hits.body;
  }
  server.Stop();
  std::error_code ec;
  fs::remove_all(dir, ec);
}

// Runs tests/support/fake_doc_server.py (remote documents and a fake S3 endpoint) over `root`;

json UploadAndWaitOn(const HttpClient& client, const std::string& kb, const std::string& type,
                     const std::string& url) {
  HttpResponse r = client.Post(
      Kb(kb) + "/docs", json{{"type", type}, {"doc", {{"title", "remote"}, {"file_url", url}}}});
  EXPECT_EQ(r.status, 200) << r.Describe();
  const std::string id = r.Json()["result"].value("id", "");
  json doc;
  for (int i = 0; i < 500; ++i) {
    doc = client.Get(Kb(kb) + "/docs/" + id).Json()["result"];
    if (doc.value("status", "") != "PROCESSING") break;
    std::this_thread::sleep_for(20ms);
  }
  return doc;
}

TEST(KbRemoteTest, HttpAndOssSourcesWithTheirGuards) {
  ENGRAM_REQUIRE_BINARY();
  char templ[] = "/tmp/engram-kb-remote-XXXXXX";
  ASSERT_NE(mkdtemp(templ), nullptr);
  const fs::path root = templ;
  fs::create_directories(root / "pub");
  fs::create_directories(root / "bucket" / "docs");
  const std::string web_word = UniqueWord(), oss_word = UniqueWord();
  WriteFile(root / "pub" / "page.html",
            "<html><body><p>Remote page about " + web_word + ".</p></body></html>");
  WriteFile(root / "bucket" / "docs" / "report.md",
            "# Report\n\nStored in a bucket: " + oss_word + ".\n");
  PythonFake docs("fake_doc_server.py", {"--root", root.string(), "--access-key", "AKIDTEST"});
  if (docs.port() == 0) GTEST_SKIP() << "python3 or tests/support/fake_doc_server.py not available";

  ServerProcess server(
      {.extra_args = {"--embedder", "none", "--retrieval", "bm25", "--remote-fetch",
                      "--remote-fetch-allow-private", "--oss-endpoint", docs.Url("/s3"),
                      "--oss-access-key", "AKIDTEST", "--oss-secret-key", "s3cr3t"}});
  ASSERT_TRUE(server.Start());
  HttpClient client(server.BaseUrl());
  const std::string kb = UniqueId("kb");
  json doc = UploadAndWaitOn(client, kb, "LOCAL", docs.Url("/pub/page.html"));
  ASSERT_EQ(doc.value("status", ""), "SUCCESS") << doc.dump();
  EXPECT_NE(doc.value("content", "").find(web_word), std::string::npos);
  doc = UploadAndWaitOn(client, kb, "OSS", "oss://bucket/docs/report.md");
  ASSERT_EQ(doc.value("status", ""), "SUCCESS") << doc.dump();
  EXPECT_NE(doc.value("content", "").find(oss_word), std::string::npos);
  json hits =
      client.Post(Kb(kb) + "/search", json{{"query", oss_word}}).Json()["result"]["results"];
  ASSERT_EQ(hits.size(), 1u) << hits.dump();

  doc = UploadAndWaitOn(client, kb, "LOCAL", docs.Url("/redirect/pub/page.html"));
  EXPECT_EQ(doc.value("status", ""), "FAIL");
  EXPECT_NE(doc.value("error_message", "").find("redirect"), std::string::npos) << doc.dump();
  doc = UploadAndWaitOn(client, kb, "LOCAL", docs.Url("/pub/missing.txt"));
  EXPECT_EQ(doc.value("status", ""), "FAIL");
  EXPECT_NE(doc.value("error_message", "").find("404"), std::string::npos) << doc.dump();
  doc = UploadAndWaitOn(client, kb, "OSS", "oss://bucket/missing.md");
  EXPECT_EQ(doc.value("status", ""), "FAIL") << doc.dump();
  server.Stop();

  // Without the test-only flag, remote fetch never reaches loopback; wrong OSS keys are refused.
  ServerProcess strict({.extra_args = {"--embedder", "none", "--retrieval", "bm25",
                                       "--remote-fetch", "--oss-endpoint", docs.Url("/s3"),
                                       "--oss-access-key", "WRONG", "--oss-secret-key", "x"}});
  ASSERT_TRUE(strict.Start());
  HttpClient strict_client(strict.BaseUrl());
  doc = UploadAndWaitOn(strict_client, kb, "LOCAL", docs.Url("/pub/page.html"));
  EXPECT_EQ(doc.value("status", ""), "FAIL");
  EXPECT_NE(doc.value("error_message", "").find("private"), std::string::npos) << doc.dump();
  doc = UploadAndWaitOn(strict_client, kb, "OSS", "oss://bucket/docs/report.md");
  EXPECT_EQ(doc.value("status", ""), "FAIL");
  EXPECT_NE(doc.value("error_message", "").find("403"), std::string::npos) << doc.dump();
  strict.Stop();
  std::error_code ec;
  fs::remove_all(root, ec);
}

}  // namespace
}  // namespace engram::testing
