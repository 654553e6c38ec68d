// Export and import end to end over real stores: a SQLite store filled through the domain
// contracts is exported, imported into every backend (store_backends.h: SQLite, and PostgreSQL
// when a test cluster is configured), and the import exported again must read the same, line for
// line; an import run again writes nothing; a bad file writes nothing.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "common/codec.h"
#include "store_backends.h"
#include "transfer/exporter.h"
#include "transfer/importer.h"

namespace engram::transfer {
namespace {

class TransferTest : public testing::StoreBackendTest {
 protected:
  void SetUp() override {
    StoreBackendTest::SetUp();
    if (IsSkipped()) return;
    char tmpl[] = "/tmp/engram-transfer-XXXXXX";
    source_dir_ = mkdtemp(tmpl);
    auto source = SqliteStore::Open({.path = source_dir_ + "/engram.db"});
    ASSERT_TRUE(source.ok()) << source.status().ToString();
    source_ = std::move(*source);
    target_ = OpenStore();
    ASSERT_NE(target_, nullptr);
    Fill(*source_);
  }
  void TearDown() override {
    source_.reset();
    target_.reset();
    if (!source_dir_.empty()) std::filesystem::remove_all(source_dir_);
    StoreBackendTest::TearDown();
  }

  // Something of every kind: two workspaces' Leaderboard users (one message with an image, one
  // without a vector), agent memories with history and feedback, a skill with a former version,
  // and a knowledge base with a parsed and a failed document.
  static void Fill(Store& store) {
    const std::string png = "\x89PNG fake image bytes";
    AddBatch batch;
    batch.images = {{.sha256 = Sha256Hex(png), .mime = "image/png", .bytes = png}};
    for (int i = 0; i < 3; ++i) {
      MemoryRecord m;
      m.id = "m-msg-" + std::to_string(i);
      m.workspace = "w1";
      m.user_id = "alice";
      m.session_id = "s1";
      m.role = i % 2 ? "assistant" : "user";
      m.text = "message " + std::to_string(i);
      m.metadata_json = R"({"turn": )" + std::to_string(i) + "}";
      m.source_ts_us = 1700000000000000 + i;
      m.position = i;
      m.created_at_us = m.updated_at_us = 100 + i;
      if (i == 0) {
        m.parts_json = R"([{"type":"text","text":"message 0"},{"mime":"image/png","sha256":")" +
                       Sha256Hex(png) + R"(","type":"image"}])";
      }
      if (i != 2) {
        m.vector = {0.125f * static_cast<float>(i + 1), -0.5f};
        m.vector_model = "use-lite";
      }
      batch.memories.push_back(std::move(m));
    }
    ASSERT_TRUE(store.Add(std::move(batch)).ok());
    AddBatch other;
    MemoryRecord m;
    m.id = "m-msg-w2";
    m.workspace = "w2";
    m.user_id = "bob";
    m.text = "another workspace";
    m.created_at_us = m.updated_at_us = 200;
    other.memories = {m};
    ASSERT_TRUE(store.Add(std::move(other)).ok());

    MemoryRecord mem;
    mem.id = "m-mem-1";
    mem.user_id = "alice";
    mem.app_id = "app";
    mem.text = "likes tea";
    mem.categories = {"food"};
    mem.created_at_us = mem.updated_at_us = 300;
    mem.expires_at_us = 99999999;
    mem.provenance_json = R"({"event_id":"me-1","extractor":"rules"})";
    mem.vector = {1.0f, 0.0f};
    mem.vector_model = "use-lite";
    ASSERT_TRUE(store
                    .ApplyMemoryChanges({.workspace = "w1",
                                         .event_id = "me-1",
                                         .changes = {{MemoryChange::Op::kInsert, mem, "", ""}}})
                    .ok());
    MemoryRecord updated = mem;
    updated.text = "likes green tea";
    updated.updated_at_us = 400;
    ASSERT_TRUE(
        store
            .ApplyMemoryChanges({.workspace = "w1",
                                 .changes = {{MemoryChange::Op::kUpdate, updated, mem.text, "{}"}}})
            .ok());
    ASSERT_TRUE(store
                    .InsertFeedback("w1", {.id = "mf-1",
                                           .memory_id = mem.id,
                                           .feedback = "POSITIVE",
                                           .reason = "right",
                                           .created_at_us = 500})
                    .ok());

    SkillRecord skill;
    skill.id = "s-1";
    skill.workspace = "w1";
    skill.owner = "alice";
    skill.name = "rotate-keys";
    skill.description = "How to rotate keys";
    skill.version = "1.0.0";
    skill.tags = {"ops"};
    skill.files = {{"SKILL.md", "---\nname: rotate-keys\n---\nsteps"}, {"run.sh", "echo"}};
    skill.created_at_us = skill.updated_at_us = 600;
    ASSERT_TRUE(
        store.ApplySkillChanges({.workspace = "w1", .changes = {{SkillChange::Op::kInsert, skill}}})
            .ok());
    SkillRecord v2 = skill;
    v2.version = "2.0.0";
    v2.updated_at_us = 700;
    v2.vector = {0.0f, 1.0f};
    v2.vector_model = "use-lite";
    ASSERT_TRUE(store
                    .ApplySkillChanges(
                        {.workspace = "w1", .changes = {{SkillChange::Op::kUpdate, v2, skill}}})
                    .ok());

    for (const char* id : {"d-ok", "d-bad"}) {
      KbDocRecord doc{.workspace = "w1",
                      .kb_id = "kb",
                      .id = id,
                      .job_id = std::string("j-") + id,
                      .title = std::string("T ") + id,
                      .source_type = "LOCAL",
                      .file_url = std::string(id) + ".md",
                      .created_at_us = 800,
                      .updated_at_us = 800};
      ASSERT_TRUE(store.PutKbDoc(doc).ok());
      std::vector<KbChunkRecord> chunks;
      if (doc.id == "d-ok") {
        doc.status = JobStatus::kSucceeded;
        doc.content = "# Keys\nRotate them monthly.";
        chunks = {{.doc_id = doc.id,
                   .position = 0,
                   .heading = "Keys",
                   .text = "Rotate them",
                   .vector_model = "use-lite",
                   .vector = {0.5f, 0.5f}},
                  {.doc_id = doc.id, .position = 1, .heading = "Keys", .text = "monthly."}};
      } else {
        doc.status = JobStatus::kFailed;
        doc.error_message = "unsupported file";
      }
      doc.updated_at_us = 900;
      ASSERT_TRUE(store.FinishKbDoc(doc, chunks).ok());
    }
  }

  // The export of `store` without its header line (which names the time of the export).
  static std::string Records(Store& store, ExportOptions options = {}) {
    std::ostringstream out;
    auto counts = ExportStore(store, options, out);
    EXPECT_TRUE(counts.ok()) << counts.status().ToString();
    const std::string text = out.str();
    return text.substr(text.find('\n') + 1);
  }

  std::string WriteFile(const std::string& name, const std::string& text) {
    const std::string path = source_dir_ + "/" + name;
    std::ofstream(path, std::ios::binary) << text;
    return path;
  }

  std::string Export(Store& store, ExportOptions options = {}) {
    std::ostringstream out;
    EXPECT_TRUE(ExportStore(store, options, out).ok());
    return WriteFile("export.jsonl", out.str());
  }

  std::string source_dir_;
  std::unique_ptr<SqliteStore> source_;
  std::unique_ptr<Store> target_;
};

TEST_P(TransferTest, AnImportExportsAgainAsItWasExported) {
  const std::string path = Export(*source_);
  auto result = ImportFile(*target_, path);
  ASSERT_TRUE(result.ok()) << result.status().ToString();
  EXPECT_EQ(result->read.images, 1);
  EXPECT_EQ(result->written.messages, 4);
  EXPECT_EQ(result->written.memories, 1);
  EXPECT_EQ(result->written.skills, 1);
  EXPECT_EQ(result->written.kb_documents, 2);

  EXPECT_EQ(Records(*target_), Records(*source_));
  // What the services read is there as written: history, versions, chunks, the image.
  EXPECT_EQ(target_->GetHistory("w1", "m-mem-1")->size(), 2u);
  EXPECT_EQ(target_->GetSkillVersions("w1", "s-1")->size(), 1u);
  EXPECT_EQ(target_->LoadKbChunks("w1", "kb")->size(), 2u);
  EXPECT_EQ(target_->GetKbDoc("w1", "kb", "d-bad")->error_message, "unsupported file");
  auto images = target_->GetImages({Sha256Hex("\x89PNG fake image bytes")});
  ASSERT_TRUE(images.ok());
  EXPECT_EQ(images->size(), 1u);
}

TEST_P(TransferTest, AStoreMovedThereAndBackReadsTheSame) {
  // SQLite -> this backend -> a new SQLite store: on PostgreSQL, the move to the shared store and
  // back again.
  ASSERT_TRUE(ImportFile(*target_, Export(*source_)).ok());
  const std::string back_dir = source_dir_ + "/back";
  std::filesystem::create_directories(back_dir);
  auto back = SqliteStore::Open({.path = back_dir + "/engram.db"});
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  auto result = ImportFile(**back, Export(*target_));
  ASSERT_TRUE(result.ok()) << result.status().ToString();
  EXPECT_EQ(result->written.messages, 4);
  EXPECT_EQ(Records(**back), Records(*source_));
}

TEST_P(TransferTest, AnImportRunAgainWritesNothing) {
  const std::string path = Export(*source_);
  ASSERT_TRUE(ImportFile(*target_, path).ok());
  const std::string first = Records(*target_);
  auto again = ImportFile(*target_, path);
  ASSERT_TRUE(again.ok()) << again.status().ToString();
  EXPECT_EQ(again->written.images + again->written.messages + again->written.memories +
                again->written.skills + again->written.kb_documents,
            0);
  EXPECT_EQ(again->skipped.messages, 4);
  EXPECT_EQ(again->skipped.memories, 1);
  EXPECT_EQ(again->skipped.skills, 1);
  EXPECT_EQ(again->skipped.kb_documents, 2);
  EXPECT_EQ(again->skipped.images, 1);
  EXPECT_EQ(Records(*target_), first);
}

TEST_P(TransferTest, ABadLineWritesNothingAndNamesTheLineAndField) {
  std::string text = [&] {
    std::ostringstream out;
    EXPECT_TRUE(ExportStore(*source_, {}, out).ok());
    return out.str();
  }();
  text += R"({"type":"memory","workspace":"w9","id":"m-x","text":"t","created_at_us":"soon"})"
          "\n";
  const int lines = static_cast<int>(std::count(text.begin(), text.end(), '\n'));
  auto result = ImportFile(*target_, WriteFile("bad.jsonl", text));
  ASSERT_FALSE(result.ok());
  EXPECT_EQ(result.status().code(), StatusCode::kInvalidParameter);
  EXPECT_EQ(result.status().message(),
            "line " + std::to_string(lines) + ": memory.created_at_us: expected an integer");
  auto scopes = target_->ListStoredScopes();
  ASSERT_TRUE(scopes.ok());
  EXPECT_TRUE(scopes->leaderboard_users.empty());
  EXPECT_TRUE(scopes->memory_workspaces.empty());
}

TEST_P(TransferTest, ExportsOneWorkspaceOrOneUser) {
  ASSERT_TRUE(ImportFile(*target_, Export(*source_, {.workspace = "w2"})).ok());
  auto scopes = target_->ListStoredScopes();
  ASSERT_TRUE(scopes.ok());
  using Pairs = std::vector<std::pair<std::string, std::string>>;
  EXPECT_EQ(scopes->leaderboard_users, (Pairs{{"w2", "bob"}}));
  EXPECT_TRUE(scopes->memory_workspaces.empty());
  EXPECT_TRUE(scopes->knowledge_bases.empty());

  // One user: their messages, memories and skills; knowledge bases belong to no user.
  const std::string alice = Records(*source_, {.user_id = "alice"});
  EXPECT_NE(alice.find("m-mem-1"), std::string::npos);
  EXPECT_NE(alice.find("s-1"), std::string::npos);
  EXPECT_EQ(alice.find("m-msg-w2"), std::string::npos);
  EXPECT_EQ(alice.find("kb_document"), std::string::npos);
}

TEST_P(TransferTest, WithoutVectorsRecordsCarryNone) {
  const std::string text = Records(*source_, {.vectors = false});
  EXPECT_EQ(text.find("\"vector\""), std::string::npos);
  ASSERT_TRUE(ImportFile(*target_, Export(*source_, {.vectors = false})).ok());
  auto scope = target_->LoadScope("w1", "alice");
  ASSERT_TRUE(scope.ok());
  ASSERT_EQ(scope->size(), 3u);
  EXPECT_TRUE(scope->front().vector.empty());
}

ENGRAM_INSTANTIATE_STORE_BACKENDS(TransferTest);

}  // namespace
}  // namespace engram::transfer
