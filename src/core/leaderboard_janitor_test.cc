#include "core/leaderboard_janitor.h"

#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>
#include <thread>

#include "common/clock.h"
#include "store/sqlite_store.h"

namespace engram {
namespace {

class LeaderboardJanitorTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/engram-janitor-XXXXXX";
    dir_ = mkdtemp(tmpl);
    store_ = std::move(SqliteStore::Open({.path = dir_ + "/db", .clock = &clock_})).value();
    registry_ = std::make_unique<ShardRegistry>(store_.get(), &analyzer_, ShardOptions{});
    // The service stamps what it stores with the janitor's clock: idle time moves when the test
    // advances it.
    service_ =
        std::make_unique<LeaderboardService>(store_.get(), registry_.get(), &analyzer_, nullptr,
                                             nullptr, LeaderboardOptions{.clock = &clock_});
  }
  void TearDown() override {
    service_.reset();
    registry_.reset();
    store_.reset();
    std::filesystem::remove_all(dir_);
  }
  void Add(const std::string& rid, const std::string& user, const std::string& text) {
    LeaderboardAddRequest r;
    r.request_id = rid;
    r.user_id = user;
    r.session_id = "s";
    LeaderboardMessage m;
    m.role = "user";
    m.parts.push_back(ContentPart{.text = text});
    r.messages.push_back(m);
    r.body_hash = rid + user;
    r.response_json = "{}";
    ASSERT_TRUE(service_->Add(r).ok());
  }
  size_t Count(const std::string& user, const std::string& query) {
    auto r = service_->Search({.query = query, .user_id = user, .top_k = 100});
    EXPECT_TRUE(r.ok());
    return r->hits.size();
  }

  std::string dir_;
  FakeClock clock_;
  Analyzer analyzer_;
  std::unique_ptr<SqliteStore> store_;
  std::unique_ptr<ShardRegistry> registry_;
  std::unique_ptr<LeaderboardService> service_;
};

TEST_F(LeaderboardJanitorTest, RetentionDeletesUsersOnceTheyAreIdleLongEnough) {
  Add("r1", "a", "walrus colony");
  Add("r1", "b", "walrus colony");
  LeaderboardJanitor janitor(service_.get(), {.retention = std::chrono::hours(24),
                                              .idempotency_ttl = std::chrono::microseconds(0),
                                              .clock = &clock_});
  janitor.SweepOnce();
  EXPECT_EQ(janitor.purged_users(), 0);
  EXPECT_EQ(Count("a", "walrus"), 1u);
  clock_.Advance(std::chrono::hours(48));  // two days later, without a write
  janitor.SweepOnce();
  EXPECT_EQ(janitor.purged_users(), 2);
  EXPECT_EQ(janitor.purged_messages(), 2);
  EXPECT_EQ(Count("a", "walrus"), 0u);
  EXPECT_EQ(Count("b", "walrus"), 0u);
  EXPECT_EQ(janitor.sweep_failures(), 0);
}

TEST_F(LeaderboardJanitorTest, RecentUsersSurviveTheSweep) {
  Add("r1", "fresh", "walrus colony");
  LeaderboardJanitor janitor(service_.get(),
                             {.retention = std::chrono::hours(1), .clock = &clock_});
  clock_.Advance(std::chrono::minutes(59));
  janitor.SweepOnce();
  EXPECT_EQ(janitor.purged_users(), 0);
  EXPECT_EQ(Count("fresh", "walrus"), 1u);
}

TEST_F(LeaderboardJanitorTest, ExpiredIdempotencyRecordsLetARequestIdStoreAgain) {
  Add("r1", "u", "narwhal tusk");
  clock_.Advance(std::chrono::hours(8 * 24));  // 8 days later
  LeaderboardJanitor janitor(service_.get(), {.clock = &clock_});
  janitor.SweepOnce();
  EXPECT_EQ(janitor.expired_idempotency(), 1);
  Add("r1", "u", "narwhal tusk");  // stored again: the record is gone
  EXPECT_EQ(Count("u", "narwhal"), 2u);
}

TEST_F(LeaderboardJanitorTest, IntervalIsAQuarterOfTheShortestPeriodWithinBounds) {
  EXPECT_EQ(LeaderboardJanitor(service_.get(), {}).interval(), std::chrono::hours(1));
  EXPECT_EQ(LeaderboardJanitor(service_.get(), {.retention = std::chrono::seconds(8)}).interval(),
            std::chrono::seconds(2));
  EXPECT_EQ(
      LeaderboardJanitor(service_.get(), {.retention = std::chrono::milliseconds(100)}).interval(),
      std::chrono::seconds(1));
}

TEST_F(LeaderboardJanitorTest, StartAndStopRunTheThread) {
  Add("r1", "gone", "sea otter");
  LeaderboardJanitor janitor(service_.get(), {.retention = std::chrono::hours(1),
                                              .interval = std::chrono::milliseconds(20),
                                              .clock = &clock_});
  janitor.Start();
  // Time moves on while the test waits for the thread: past the retention, and past the pause
  // after whichever sweep the thread is in (its first one may start before or after a move).
  for (int i = 0; i < 200 && janitor.purged_users() == 0; ++i) {
    clock_.Advance(std::chrono::hours(2));
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  janitor.Stop();
  EXPECT_EQ(janitor.purged_users(), 1);
  EXPECT_EQ(Count("gone", "otter"), 0u);
}

}  // namespace
}  // namespace engram
