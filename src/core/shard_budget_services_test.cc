// The four shard caches (Leaderboard scopes, V4 memories, knowledge bases, skills) under one tight
// ShardBudget over a real SQLite store: idle shards of every domain are dropped, a dropped shard
// is loaded again on its next use with everything written before, writes racing evictions lose
// nothing, and the memory vector backfill survives its shard being dropped.
#include <gtest/gtest.h>
#include <stdlib.h>

#include <atomic>
#include <cctype>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <thread>

#include "common/ids.h"
#include "core/kb_service.h"
#include "core/memory_service.h"
#include "core/shard_budget.h"
#include "core/shard_registry.h"
#include "core/skill_service.h"
#include "extract/rule_based_extractor.h"
#include "extract/skill_extractor.h"
#include "store/sqlite_store.h"

namespace engram {
namespace {

using namespace std::chrono_literals;

// Embeds a text along a "tea" axis when it says tea, else along another one: cosines known in
// advance.
class TeaEmbedder final : public Embedder {
 public:
  const std::string& model_id() const override { return id_; }
  int dimension() const override { return 2; }
  Result<std::vector<std::vector<float>>> EmbedBatch(
      const std::vector<std::string>& texts) const override {
    std::vector<std::vector<float>> out;
    for (const std::string& t : texts) {
      if (t.find("tea") != std::string::npos) {
        out.push_back({1.0f, 0.0f});
      } else {
        out.push_back({0.0f, 1.0f});
      }
    }
    return out;
  }

 private:
  std::string id_ = "tea-axis";
};

class ShardBudgetServicesTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/shard_budget_services_test.XXXXXX";
    dir_ = mkdtemp(tmpl);
    std::filesystem::create_directories(dir_ + "/import");
    auto s = SqliteStore::Open({.path = dir_ + "/engram.db"});
    ASSERT_TRUE(s.ok()) << s.status().ToString();
    store_ = std::move(*s);
  }
  void TearDown() override {
    store_.reset();
    std::filesystem::remove_all(dir_);
  }

  static MemoryFilter Alice() {
    MemoryFilter f;
    f.AndEquals("user_id", "alice");
    return f;
  }
  static MemoryAddRequest Verbatim(const std::string& workspace, const std::string& text) {
    MemoryAddRequest r;
    r.workspace = workspace;
    r.user_id = "alice";
    r.infer = false;
    r.messages.push_back({"user", text, 0});
    return r;
  }
  static void AddAndWait(MemoryService& service, const MemoryAddRequest& request) {
    auto id = service.Add(request);
    ASSERT_TRUE(id.ok()) << id.status().ToString();
    for (int i = 0; i < 1000; ++i) {
      auto e = service.GetEvent(request.workspace, *id);
      ASSERT_TRUE(e.ok());
      if (e->status == JobStatus::kSucceeded) return;
      ASSERT_NE(e->status, JobStatus::kFailed) << e->error_message;
      std::this_thread::sleep_for(5ms);
    }
    FAIL() << "event did not finish";
  }
  static std::vector<std::string> Texts(MemoryService& service, const std::string& workspace,
                                        const std::string& query) {
    auto hits = service.Search({.workspace = workspace, .query = query, .filter = Alice()});
    EXPECT_TRUE(hits.ok()) << hits.status().ToString();
    std::vector<std::string> out;
    if (hits.ok()) {
      for (const MemoryHit& h : *hits) out.push_back(h.memory.text);
    }
    return out;
  }

  std::string dir_;
  Analyzer analyzer_;
  RuleBasedExtractor extractor_;
  BuiltinSkillExtractor skill_extractor_;
  std::unique_ptr<SqliteStore> store_;
};

// A one-byte budget keeps no idle shard: every load drops all the others, in every domain. Each
// domain's data is found again after its shard was dropped.
TEST_F(ShardBudgetServicesTest, EveryDomainsShardsAreDroppedAndReloadedWithTheirData) {
  ShardBudget budget({.limit_bytes = 1, .check_every = 1});
  ShardRegistry leaderboard(store_.get(), &analyzer_, ShardOptions{}, nullptr, {.budget = &budget});
  MemoryService memories(store_.get(), &analyzer_, nullptr, &extractor_, {.budget = &budget});
  ASSERT_TRUE(memories.Start().ok());
  DocFetcher fetcher({.import_dir = dir_ + "/import"});
  KbService kb(store_.get(), &analyzer_, nullptr, &fetcher, {.budget = &budget});
  ASSERT_TRUE(kb.Start().ok());
  SkillService skills(store_.get(), &analyzer_, nullptr, &skill_extractor_, {.budget = &budget});
  ASSERT_TRUE(skills.Start().ok());

  constexpr int kN = 3;
  std::vector<std::string> task_ids;
  for (int i = 0; i < kN; ++i) {
    const std::string n = std::to_string(i);
    // Leaderboard: stored, then the scope loaded.
    AddBatch batch;
    MemoryRecord m;
    m.id = NewId("m");
    m.workspace = "w";
    m.user_id = "u" + n;
    m.session_id = "s";
    m.text = "the harbour ferry number " + n;
    m.created_at_us = m.updated_at_us = 1;
    batch.memories.push_back(m);
    ASSERT_TRUE(store_->Add(batch).ok());
    ASSERT_TRUE(leaderboard.Get("w", "u" + n).ok());
    // V4 memories, one workspace each.
    AddAndWait(memories, Verbatim("w" + n, "alice keeps a zebra called stripes" + n));
    // Knowledge bases, one each.
    std::ofstream(dir_ + "/import/doc" + n + ".txt")
        << "The lighthouse keeper logbook volume " << n << " lists every passing ship.\n";
    auto doc = kb.Upload({.workspace = "w",
                          .kb_id = "kb" + n,
                          .type = DocSourceType::kLocal,
                          .id = "d" + n,
                          .title = "Logbook " + n,
                          .file_url = "doc" + n + ".txt"});
    ASSERT_TRUE(doc.ok()) << doc.status().ToString();
    // Skills, one workspace each.
    auto task = skills.Add(
        {"w" + n,
         {{"user", "How do I rotate the API keys?", 0},
          {"assistant", "1. Open the console.\n2. Create a new key.\n3. Delete the old key.", 0}},
         "u",
         ""});
    ASSERT_TRUE(task.ok()) << task.status().ToString();
    task_ids.push_back(*task);
  }
  for (int i = 0; i < kN; ++i) {
    const std::string n = std::to_string(i);
    bool done = false;
    for (int t = 0; t < 1000 && !done; ++t) {
      auto d = kb.Get("w", "kb" + n, "d" + n);
      ASSERT_TRUE(d.ok());
      ASSERT_NE(d->status, JobStatus::kFailed) << d->error_message;
      done = d->status == JobStatus::kSucceeded;
      if (!done) std::this_thread::sleep_for(5ms);
    }
    ASSERT_TRUE(done) << "document " << n << " was not ingested";
    done = false;
    for (int t = 0; t < 1000 && !done; ++t) {
      auto task = skills.GetTask("w" + n, task_ids[i]);
      ASSERT_TRUE(task.ok());
      ASSERT_NE(task->status, JobStatus::kFailed) << task->error_message;
      done = task->status == JobStatus::kSucceeded;
      if (!done) std::this_thread::sleep_for(5ms);
    }
    ASSERT_TRUE(done) << "skill task " << n << " did not finish";
  }
  // Touch every domain once more, so each has had a shard dropped by a later load.
  for (int round = 0; round < 2; ++round) {
    for (int i = 0; i < kN; ++i) {
      const std::string n = std::to_string(i);
      ASSERT_TRUE(leaderboard.Get("w", "u" + n).ok());
      ASSERT_TRUE(memories.Search({.workspace = "w" + n, .query = "x", .filter = Alice()}).ok());
      ASSERT_TRUE(kb.Search("w", "kb" + n, "x", 1).ok());
      ASSERT_TRUE(skills.Search({.workspace = "w" + n, .query = "x", .user_id = "u"}).ok());
    }
  }
  for (ShardDomain d : {ShardDomain::kLeaderboard, ShardDomain::kMemories, ShardDomain::kKb,
                        ShardDomain::kSkills}) {
    EXPECT_GT(budget.evictions(d), 0) << ShardDomainName(d);
    // A dropped Leaderboard or memories shard stays counted until its graph's save has run.
    for (int t = 0; t < 2000 && budget.Usage()[static_cast<size_t>(d)].shards > 1; ++t) {
      std::this_thread::sleep_for(5ms);
    }
    EXPECT_LE(budget.Usage()[static_cast<size_t>(d)].shards, 1u) << ShardDomainName(d);
  }
  EXPECT_GT(leaderboard.evictions(), 0);

  // The probes an HTTP I/O thread asks before a search follow the budget: each load drops the
  // idle shards of every domain, which then read as not loaded (their next search goes to a
  // worker), and a probe itself loads nothing.
  ASSERT_TRUE(memories.Search({.workspace = "w0", .query = "x", .filter = Alice()}).ok());
  EXPECT_TRUE(memories.WorkspaceLoaded("w0"));
  EXPECT_FALSE(memories.WorkspaceLoaded("w1"));
  ASSERT_TRUE(kb.Search("w", "kb0", "x", 1).ok());
  EXPECT_TRUE(kb.KnowledgeBaseLoaded("w", "kb0"));
  EXPECT_FALSE(memories.WorkspaceLoaded("w0"));
  ASSERT_TRUE(skills.Search({.workspace = "w0", .query = "x", .user_id = "u"}).ok());
  EXPECT_TRUE(skills.WorkspaceLoaded("w0"));
  EXPECT_FALSE(kb.KnowledgeBaseLoaded("w", "kb0"));
  ASSERT_TRUE(leaderboard.Get("w", "u0").ok());
  EXPECT_TRUE(leaderboard.Loaded("w", "u0"));
  EXPECT_FALSE(skills.WorkspaceLoaded("w0"));
  EXPECT_FALSE(leaderboard.Loaded("w", "u1"));

  // Every shard read back from the store has what was written before it was dropped.
  for (int i = 0; i < kN; ++i) {
    const std::string n = std::to_string(i);
    auto scope = leaderboard.Get("w", "u" + n);
    ASSERT_TRUE(scope.ok());
    EXPECT_EQ((*scope)->size(), 1u);
    scope->reset();
    EXPECT_EQ(Texts(memories, "w" + n, "zebra stripes" + n),
              std::vector<std::string>{"alice keeps a zebra called stripes" + n});
    auto chunks = kb.Search("w", "kb" + n, "lighthouse logbook", 5);
    ASSERT_TRUE(chunks.ok()) << chunks.status().ToString();
    ASSERT_EQ(chunks->size(), 1u) << "knowledge base " << n;
    EXPECT_EQ((*chunks)[0].doc_id, "d" + n);
    auto found = skills.Search({.workspace = "w" + n, .query = "rotate API keys", .user_id = "u"});
    ASSERT_TRUE(found.ok()) << found.status().ToString();
    EXPECT_EQ(found->size(), 1u) << "skills of workspace " << n;
  }
}

// Adds, updates and deletes run while another thread keeps loading other workspaces, so the
// shards being written are dropped whenever they are idle. Every acknowledged write is in the
// shard each time it comes back.
TEST_F(ShardBudgetServicesTest, WritesRacingEvictionsLoseNothing) {
  ShardBudget budget({.limit_bytes = 1, .check_every = 1});
  MemoryService memories(store_.get(), &analyzer_, nullptr, &extractor_,
                         {.event_workers = 2, .budget = &budget});
  ASSERT_TRUE(memories.Start().ok());
  constexpr int kWorkspaces = 4;
  constexpr int kPerWorkspace = 12;
  std::atomic<bool> stop{false};
  std::thread churn([&] {
    for (int i = 0; !stop.load(); ++i) {
      auto hits = memories.Search(
          {.workspace = "w" + std::to_string(i % kWorkspaces), .query = "note", .filter = Alice()});
      EXPECT_TRUE(hits.ok()) << hits.status().ToString();
    }
  });
  for (int i = 0; i < kWorkspaces * kPerWorkspace; ++i) {
    AddAndWait(memories,
               Verbatim("w" + std::to_string(i % kWorkspaces), "note number " + std::to_string(i)));
  }
  // In each workspace: the first note rewritten, the second deleted.
  for (int w = 0; w < kWorkspaces; ++w) {
    const std::string ws = "w" + std::to_string(w);
    size_t total = 0;
    auto all = memories.List(ws, Alice(), 1, 100, &total);
    ASSERT_TRUE(all.ok()) << all.status().ToString();
    ASSERT_EQ(total, static_cast<size_t>(kPerWorkspace));
    std::string first, second;
    for (const AgentMemory& m : *all) {
      if (m.text == "note number " + std::to_string(w)) first = m.id;
      if (m.text == "note number " + std::to_string(w + kWorkspaces)) second = m.id;
    }
    ASSERT_FALSE(first.empty());
    ASSERT_FALSE(second.empty());
    auto updated =
        memories.Update({.workspace = ws, .id = first, .text = "rewritten walrus " + ws});
    ASSERT_TRUE(updated.ok()) << updated.status().ToString();
    ASSERT_TRUE(memories.Delete(ws, second).ok());
  }
  stop = true;
  churn.join();
  EXPECT_GT(budget.evictions(ShardDomain::kMemories), 0);

  for (int round = 0; round < 2; ++round) {  // each workspace dropped and loaded again between
    for (int w = 0; w < kWorkspaces; ++w) {
      const std::string ws = "w" + std::to_string(w);
      size_t total = 0;
      auto all = memories.List(ws, Alice(), 1, 100, &total);
      ASSERT_TRUE(all.ok());
      EXPECT_EQ(total, static_cast<size_t>(kPerWorkspace - 1)) << ws;
      EXPECT_EQ(Texts(memories, ws, "walrus"), std::vector<std::string>{"rewritten walrus " + ws});
      for (const AgentMemory& m : *all) {
        EXPECT_NE(m.text, "note number " + std::to_string(w + kWorkspaces)) << "deleted, in " << ws;
        EXPECT_NE(m.text, "note number " + std::to_string(w)) << "rewritten, in " << ws;
      }
    }
  }
}

// Memories stored without vectors are embedded by a backfill that each load of their workspace
// queues. Loads of other workspaces keep dropping the shard meanwhile; the backfill skips a
// dropped shard, and once a workspace stays loaded its vectors arrive.
TEST_F(ShardBudgetServicesTest, TheVectorBackfillToleratesItsShardBeingDropped) {
  constexpr int kWorkspaces = 3;
  {
    MemoryService plain(store_.get(), &analyzer_, nullptr, &extractor_, {});
    ASSERT_TRUE(plain.Start().ok());
    for (int w = 0; w < kWorkspaces; ++w) {
      AddAndWait(plain, Verbatim("w" + std::to_string(w), "alice likes green tea"));
    }
  }
  TeaEmbedder embedder;
  ShardBudget budget({.limit_bytes = 1, .check_every = 1});
  MemoryService memories(store_.get(), &analyzer_, &embedder, &extractor_, {.budget = &budget});
  ASSERT_TRUE(memories.Start().ok());
  auto similarity = [&](const std::string& ws) {
    auto hits = memories.Search({.workspace = ws, .query = "tea", .filter = Alice()});
    EXPECT_TRUE(hits.ok()) << hits.status().ToString();
    return hits.ok() && hits->size() == 1 ? (*hits)[0].similarity : -1.0f;
  };
  for (int i = 0; i < 30; ++i) {
    EXPECT_GE(similarity("w" + std::to_string(i % kWorkspaces)), 0.0f);
  }
  EXPECT_GT(budget.evictions(ShardDomain::kMemories), 0);
  for (int w = 0; w < kWorkspaces; ++w) {
    const std::string ws = "w" + std::to_string(w);
    float s = similarity(ws);
    for (int t = 0; t < 400 && s < 0.99f; ++t) {
      std::this_thread::sleep_for(5ms);
      s = similarity(ws);
    }
    EXPECT_GT(s, 0.99f) << "no vector reached the memory of " << ws;
  }
}

}  // namespace
}  // namespace engram
