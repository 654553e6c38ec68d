// SweepGraphFiles: the graphs of stored scopes stay, every file of another scope's graph goes,
// and other names, links and directories are left alone; SweepGraphDir: the store's listing and
// its failure.
#include "core/graph_sweep.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "core/shard_graphs.h"
#include "core/shard_keys.h"

namespace engram {
namespace {

namespace fs = std::filesystem;

// A store that only lists scopes (or fails to).
class ListedScopes : public TransferStore {
 public:
  Result<StoredScopes> ListStoredScopes() override {
    if (fail) return Status::Unavailable("store down");
    return scopes;
  }
  Result<bool> ImportAgentMemory(const AgentMemoryImport&) override {
    return Status::Internal("not used");
  }
  Result<bool> ImportSkill(const SkillRecord&, const std::vector<SkillVersionRecord>&) override {
    return Status::Internal("not used");
  }
  StoredScopes scopes;
  bool fail = false;
};

class GraphSweepTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = (fs::temp_directory_path() /
            ("engram_graph_sweep_test_" + std::to_string(::getpid()) + "_" +
             ::testing::UnitTest::GetInstance()->current_test_info()->name()))
               .string();
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  void Write(const std::string& path) {
    std::ofstream(path) << "codes";
    ASSERT_TRUE(fs::exists(path));
  }
  // A graph as a save leaves it: the graph and its record.
  std::string Graph(ShardDomain domain, const std::string& key) {
    const std::string path = ShardGraphPath(dir_, domain, key);
    Write(path);
    Write(path + ".meta");
    return path;
  }

  std::string dir_;
};

TEST_F(GraphSweepTest, KeepsStoredScopesGraphsAndRemovesTheOthers) {
  const std::string user = Graph(ShardDomain::kLeaderboard, LeaderboardShardKey("ws", "alice"));
  const std::string memories = Graph(ShardDomain::kMemories, MemoryShardKey("ws"));
  const std::string kb = Graph(ShardDomain::kKb, KbShardKey("ws", "kb1"));
  // Gone from the store: a user (with a save's leftovers), another workspace's memories, a
  // knowledge base, and the same user id in another workspace.
  const std::string deleted = Graph(ShardDomain::kLeaderboard, LeaderboardShardKey("ws", "bob"));
  Write(deleted + ".tmp");
  Write(deleted + ".meta.tmp");
  const std::string other_ws = Graph(ShardDomain::kMemories, MemoryShardKey("ws2"));
  const std::string other_kb = Graph(ShardDomain::kKb, KbShardKey("ws", "kb2"));
  const std::string elsewhere =
      Graph(ShardDomain::kLeaderboard, LeaderboardShardKey("ws2", "alice"));
  // A record whose graph is missing, and files no save writes.
  const std::string orphan_record =
      ShardGraphPath(dir_, ShardDomain::kKb, KbShardKey("ws", "kb3")) + ".meta";
  Write(orphan_record);
  Write(dir_ + "/README.txt");
  Write(dir_ + "/.hnsw");

  StoredScopes scopes;
  scopes.leaderboard_users = {{"ws", "alice"}, {"ws", "carol"}};  // carol has no graph
  scopes.memory_workspaces = {"ws"};
  scopes.skill_workspaces = {"ws"};
  scopes.knowledge_bases = {{"ws", "kb1"}};
  const GraphSweepResult swept = SweepGraphFiles(dir_, scopes);
  EXPECT_EQ(swept.kept, 3u);
  EXPECT_EQ(swept.removed, 5u);

  for (const std::string& path : {user, memories, kb}) {
    EXPECT_TRUE(fs::exists(path)) << path;
    EXPECT_TRUE(fs::exists(path + ".meta")) << path;
  }
  for (const std::string& path : {deleted, other_ws, other_kb, elsewhere}) {
    for (const char* suffix : {"", ".meta", ".tmp", ".meta.tmp"}) {
      EXPECT_FALSE(fs::exists(path + suffix)) << path << suffix;
    }
  }
  EXPECT_FALSE(fs::exists(orphan_record));
  EXPECT_TRUE(fs::exists(dir_ + "/README.txt"));
  EXPECT_TRUE(fs::exists(dir_ + "/.hnsw"));

  // A second sweep finds nothing more to remove.
  const GraphSweepResult again = SweepGraphFiles(dir_, scopes);
  EXPECT_EQ(again.kept, 3u);
  EXPECT_EQ(again.removed, 0u);
}

TEST_F(GraphSweepTest, AStoreWithoutScopesLeavesNoGraph) {
  Graph(ShardDomain::kLeaderboard, LeaderboardShardKey("ws", "alice"));
  Graph(ShardDomain::kMemories, MemoryShardKey("ws"));
  const GraphSweepResult swept = SweepGraphFiles(dir_, StoredScopes{});
  EXPECT_EQ(swept.kept, 0u);
  EXPECT_EQ(swept.removed, 2u);
  EXPECT_TRUE(fs::is_empty(dir_));
}

TEST_F(GraphSweepTest, NoDirectoryIsNothingToSweep) {
  const GraphSweepResult none = SweepGraphFiles(dir_ + "/missing", StoredScopes{});
  EXPECT_EQ(none.kept + none.removed, 0u);
  const GraphSweepResult off = SweepGraphFiles("", StoredScopes{});
  EXPECT_EQ(off.kept + off.removed, 0u);
}

TEST_F(GraphSweepTest, LinksAndDirectoriesAreLeftAlone) {
  const std::string outside = dir_ + "-outside";
  std::ofstream(outside) << "not a graph";
  const std::string link = ShardGraphPath(dir_, ShardDomain::kLeaderboard, "gone");
  fs::create_symlink(outside, link);
  fs::create_directory(dir_ + "/folder.hnsw");
  const GraphSweepResult swept = SweepGraphFiles(dir_, StoredScopes{});
  EXPECT_EQ(swept.removed, 0u);
  EXPECT_TRUE(fs::is_symlink(link));
  EXPECT_TRUE(fs::is_directory(dir_ + "/folder.hnsw"));
  std::string text;
  std::getline(std::ifstream(outside), text);
  EXPECT_EQ(text, "not a graph");
  fs::remove(outside);
}

TEST_F(GraphSweepTest, TheStartsSweepListsTheStoreAndKeepsEverythingWhenItCannot) {
  ListedScopes store;
  store.scopes.leaderboard_users = {{"ws", "alice"}};
  const std::string kept = Graph(ShardDomain::kLeaderboard, LeaderboardShardKey("ws", "alice"));
  const std::string gone = Graph(ShardDomain::kLeaderboard, LeaderboardShardKey("ws", "bob"));
  store.fail = true;
  EXPECT_EQ(SweepGraphDir(dir_, &store).removed, 0u);
  EXPECT_TRUE(fs::exists(gone));
  store.fail = false;
  const GraphSweepResult swept = SweepGraphDir(dir_, &store);
  EXPECT_EQ(swept.kept, 1u);
  EXPECT_EQ(swept.removed, 1u);
  EXPECT_TRUE(fs::exists(kept));
  EXPECT_FALSE(fs::exists(gone));
  // Without graph files the store is not asked.
  fs::remove(kept);
  fs::remove(kept + ".meta");
  store.fail = true;
  const GraphSweepResult none = SweepGraphDir(dir_, &store);
  EXPECT_EQ(none.kept + none.removed, 0u);
}

}  // namespace
}  // namespace engram
