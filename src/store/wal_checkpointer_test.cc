// WalCheckpointer: the WAL reaches the database file without the committing writer copying it,
// the inline backstop, and no commit lost across the hand-over.
#include "store/wal_checkpointer.h"

#include <gtest/gtest.h>
#include <sqlite3.h>

#include <chrono>
#include <filesystem>
#include <string>
#include <thread>

namespace engram {
namespace {

class WalCheckpointerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/engram-wal-XXXXXX";
    dir_ = mkdtemp(tmpl);
    path_ = dir_ + "/t.db";
    ASSERT_EQ(sqlite3_open(path_.c_str(), &writer_), SQLITE_OK);
    Exec(
        "PRAGMA journal_mode=WAL; PRAGMA synchronous=FULL;"
        "CREATE TABLE t(id INTEGER PRIMARY KEY, body BLOB);");
    // Start from an empty WAL so that the database file's size shows what checkpoints copied.
    sqlite3_wal_checkpoint_v2(writer_, nullptr, SQLITE_CHECKPOINT_TRUNCATE, nullptr, nullptr);
    base_size_ = std::filesystem::file_size(path_);
  }
  void TearDown() override {
    if (writer_ != nullptr) sqlite3_close(writer_);
    std::filesystem::remove_all(dir_);
  }

  void Exec(const char* sql) {
    char* err = nullptr;
    ASSERT_EQ(sqlite3_exec(writer_, sql, nullptr, nullptr, &err), SQLITE_OK) << (err ? err : "");
  }
  // One transaction per row, each ~4 KB: one or two WAL pages per commit.
  void InsertRows(int n) {
    for (int i = 0; i < n; ++i) Exec("INSERT INTO t(body) VALUES(zeroblob(4000))");
  }
  int64_t Rows(sqlite3* db) {
    sqlite3_stmt* q = nullptr;
    EXPECT_EQ(sqlite3_prepare_v2(db, "SELECT count(*) FROM t", -1, &q, nullptr), SQLITE_OK);
    EXPECT_EQ(sqlite3_step(q), SQLITE_ROW);
    int64_t n = sqlite3_column_int64(q, 0);
    sqlite3_finalize(q);
    return n;
  }

  std::string dir_, path_;
  sqlite3* writer_ = nullptr;
  uintmax_t base_size_ = 0;
};

TEST_F(WalCheckpointerTest, BackgroundThreadCopiesTheWalIntoTheDatabaseFile) {
  auto c =
      WalCheckpointer::Start({.path = path_, .trigger_pages = 16, .inline_factor = 64}, writer_);
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  InsertRows(200);
  // Rows reach the database file only through checkpoints; the writer ran none (its automatic
  // checkpoints are replaced by the hook, and 200 pages is far below the inline backstop).
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (((*c)->background_checkpoints() == 0 ||
          std::filesystem::file_size(path_) < base_size_ + 400'000) &&
         std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  EXPECT_GT((*c)->background_checkpoints(), 0u);
  EXPECT_GE(std::filesystem::file_size(path_), base_size_ + 400'000);
  c->reset();
  InsertRows(10);  // the hook is gone: commits still work
  EXPECT_EQ(Rows(writer_), 210);
}

TEST_F(WalCheckpointerTest, BusyWriterStillGetsTheWalRestarted) {
  // A writer that never pauses: the thread's copies alone would chase it, and the WAL would only
  // restart at the runaway backstop (64 × 32 pages). The commits that copy the short tail keep it
  // near the trigger.
  auto c =
      WalCheckpointer::Start({.path = path_, .trigger_pages = 32, .inline_factor = 64}, writer_);
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  InsertRows(3000);
  EXPECT_GT((*c)->background_checkpoints(), 0u);
  EXPECT_GT((*c)->inline_checkpoints(), 0u);
  // The WAL file keeps the largest size it reached (no journal_size_limit here). Without the short
  // tails it reaches the backstop's 64 × 32 pages; the bound leaves room for a starved thread.
  EXPECT_LT(std::filesystem::file_size(path_ + "-wal"), 40u * 32 * 4096);
  EXPECT_EQ(Rows(writer_), 3000);
}

TEST_F(WalCheckpointerTest, BelowTheTriggerNothingIsCopied) {
  auto c = WalCheckpointer::Start({.path = path_, .trigger_pages = 100000}, writer_);
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  InsertRows(200);  // > 1,000 pages would have made SQLite checkpoint on its own; 200 rows do not
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  EXPECT_EQ((*c)->background_checkpoints() + (*c)->inline_checkpoints(), 0u);
  EXPECT_EQ(std::filesystem::file_size(path_), base_size_);
}

TEST_F(WalCheckpointerTest, RunawayWalIsCopiedInsideTheCommit) {
  // inline_factor 1: every commit past the trigger checkpoints before it returns.
  auto c = WalCheckpointer::Start({.path = path_, .trigger_pages = 8, .inline_factor = 1}, writer_);
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  InsertRows(20);
  EXPECT_GT((*c)->inline_checkpoints(), 0u);
  EXPECT_GT(std::filesystem::file_size(path_), base_size_);
}

TEST_F(WalCheckpointerTest, EveryCommitSurvivesCloseAndReopen) {
  {
    auto c = WalCheckpointer::Start({.path = path_, .trigger_pages = 4}, writer_);
    ASSERT_TRUE(c.ok()) << c.status().ToString();
    InsertRows(300);
  }
  sqlite3_close(writer_);
  writer_ = nullptr;
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(path_.c_str(), &db), SQLITE_OK);
  EXPECT_EQ(Rows(db), 300);
  sqlite3_close(db);
}

TEST_F(WalCheckpointerTest, UnopenableDatabaseIsAnError) {
  auto c = WalCheckpointer::Start({.path = dir_ + "/missing/x.db"}, writer_);
  EXPECT_FALSE(c.ok());
}

}  // namespace
}  // namespace engram
