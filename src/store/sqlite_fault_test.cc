// The SQLite store when the disk misbehaves, through a fault-injecting VFS (sqlite_fault_vfs.h):
// a failed fsync, a short (torn) write and a write refused for lack of space are never reported
// committed, leave nothing of the failed write behind (also after a clean reopen), make
// CheckWritable (health) say unavailable while the fault lasts, and end without a restart or a
// write from outside once the fault clears.
#include <gtest/gtest.h>
#include <stdlib.h>

#include <chrono>
#include <filesystem>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "common/clock.h"
#include "memory_records.h"
#include "store/sqlite_fault_vfs.h"
#include "store/sqlite_store.h"

namespace engram {
namespace {

using namespace std::chrono_literals;

class SqliteFaultTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/engram-fault-XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
  }
  void TearDown() override {
    store_.reset();
    std::filesystem::remove_all(dir_);
  }

  void Open() {
    store_.reset();
    auto s = SqliteStore::Open({.path = dir_ + "/engram.db", .vfs = vfs_.name(), .clock = &clock_});
    ASSERT_TRUE(s.ok()) << s.status().ToString();
    store_ = std::move(*s);
  }

  Status Add(const std::string& text) { return testing::AddTestMemory(*store_, "u", text); }
  std::vector<std::string> Texts() { return testing::ScopeTexts(*store_, "u"); }

  // Calls CheckWritable until `done` holds for its answer, moving the clock 100 ms between calls
  // (the probes back off up to 2 s); false after a minute of that time.
  bool HealthUntil(const std::function<bool(const Status&)>& done) {
    for (int i = 0; i < 600; ++i) {
      if (done(store_->CheckWritable())) return true;
      clock_.Advance(100ms);
    }
    return false;
  }

  // The fault `plan` refuses an add without reporting it committed; health says so and keeps
  // saying so through probes (which fail as writes do) while the fault lasts; once it clears,
  // health recovers without an add, and the adds before and after it are all that is stored,
  // also after a reopen.
  void CheckFault(const FaultPlan& plan, const std::function<uint64_t()>& failures) {
    Open();
    ASSERT_TRUE(Add("before").ok());
    ASSERT_TRUE(store_->CheckWritable().ok());

    vfs_.Set(plan);
    const Status refused = Add("during");
    EXPECT_EQ(refused.code(), StatusCode::kUnavailable) << refused.ToString();
    const uint64_t after_add = failures();
    EXPECT_GT(after_add, 0u);
    EXPECT_EQ(store_->CheckWritable().code(), StatusCode::kUnavailable);
    // A probe past the backoff meets the fault too: health stays unavailable.
    EXPECT_TRUE(HealthUntil([&](const Status&) { return failures() > after_add; }));
    EXPECT_EQ(store_->CheckWritable().code(), StatusCode::kUnavailable);

    vfs_.Set({});
    EXPECT_TRUE(HealthUntil([](const Status& st) { return st.ok(); }));
    EXPECT_TRUE(Add("after").ok());
    EXPECT_EQ(Texts(), (std::vector<std::string>{"before", "after"}));

    Open();
    EXPECT_EQ(Texts(), (std::vector<std::string>{"before", "after"}));
    EXPECT_TRUE(store_->CheckWritable().ok());
  }

  std::string dir_;
  FakeClock clock_;
  FaultVfs vfs_{"engram-fault-test"};
  std::unique_ptr<SqliteStore> store_;  // declared after vfs_: closed before it unregisters
};

TEST_F(SqliteFaultTest, FailedFsyncIsNeverReportedCommitted) {
  CheckFault({.fail_sync = true}, [this] { return vfs_.failed_syncs(); });
}

TEST_F(SqliteFaultTest, ShortWriteIsNeverReportedCommittedAndLeavesNoTornRow) {
  CheckFault({.short_writes = true}, [this] { return vfs_.failed_writes(); });
}

TEST_F(SqliteFaultTest, NoSpaceFromTheFileLayerIsNeverReportedCommitted) {
  // The directory has room: the store's free-space check passes, and its probe commit must still
  // meet the refused write before health recovers.
  CheckFault({.full = true}, [this] { return vfs_.failed_writes(); });
}

TEST_F(SqliteFaultTest, FaultsOfTheWalAloneAreEnough) {
  CheckFault({.files = SQLITE_OPEN_WAL, .fail_sync = true}, [this] { return vfs_.failed_syncs(); });
}

TEST_F(SqliteFaultTest, WithoutFaultsTheVfsChangesNothing) {
  Open();
  for (int i = 0; i < 50; ++i) ASSERT_TRUE(Add("m" + std::to_string(i)).ok());
  Open();
  EXPECT_EQ(Texts().size(), 50u);
  EXPECT_EQ(vfs_.failed_syncs() + vfs_.failed_writes(), 0u);
}

}  // namespace
}  // namespace engram
