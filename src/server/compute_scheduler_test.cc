// The compute scheduler's slots and queue, and the body budget, without a network.
#include "server/compute_scheduler.h"

#include <gtest/gtest.h>

#include <vector>

#include "server/body_budget.h"

namespace engram {
namespace {

// Posted tasks wait here until the test runs them, as an I/O thread would.
struct ManualPost {
  std::vector<ComputeScheduler::Task> posted;
  ComputeScheduler::Post post() {
    return [this](ComputeScheduler::Task t) { posted.push_back(std::move(t)); };
  }
  void RunAll() {
    while (!posted.empty()) {
      auto t = std::move(posted.front());
      posted.erase(posted.begin());
      t();
    }
  }
};

TEST(ComputeSchedulerTest, AFreeSlotRunsOnTheCallersThreadAndTheRestWaitInOrder) {
  ManualPost io;
  ComputeScheduler scheduler(1, 10, io.post());
  std::vector<int> ran;
  // The first task, while it runs, sees two more arrive: they wait, since its slot is taken.
  ASSERT_TRUE(scheduler.RunOrQueue([&] {
    ran.push_back(1);
    EXPECT_TRUE(scheduler.RunOrQueue([&] { ran.push_back(2); }));
    EXPECT_TRUE(scheduler.RunOrQueue([&] { ran.push_back(3); }));
    EXPECT_EQ(ran, std::vector<int>{1});
  }));
  // The slot passed to the second as a posted task, not inline behind the first.
  EXPECT_EQ(ran, std::vector<int>{1});
  EXPECT_EQ(io.posted.size(), 1u);
  io.RunAll();
  EXPECT_EQ(ran, (std::vector<int>{1, 2, 3}));
  EXPECT_EQ(scheduler.queued(), 0u);
  // The slot is free again: the next task runs at once.
  ASSERT_TRUE(scheduler.RunOrQueue([&] { ran.push_back(4); }));
  EXPECT_EQ(ran.back(), 4);
  EXPECT_TRUE(io.posted.empty());
}

TEST(ComputeSchedulerTest, AFullQueueRefusesAndCloseDropsWhatWaits) {
  ManualPost io;
  ComputeScheduler scheduler(1, 1, io.post());
  int ran = 0;
  ASSERT_TRUE(scheduler.RunOrQueue([&] {
    ++ran;
    EXPECT_TRUE(scheduler.RunOrQueue([&] { ++ran; }));
    EXPECT_FALSE(scheduler.RunOrQueue([&] { ++ran; }));  // one may wait, not two
  }));
  EXPECT_EQ(io.posted.size(), 1u);  // the waiting one got the slot...
  scheduler.Close();                // ...but the I/O threads stopped before it ran
  io.RunAll();
  EXPECT_EQ(ran, 1);
}

TEST(BodyBudgetTest, ReservesUpToItsLimitAndCountsRefusals) {
  BodyBudget budget(100);
  EXPECT_TRUE(budget.Reserve(60));
  EXPECT_FALSE(budget.Reserve(41));
  EXPECT_TRUE(budget.Reserve(40));
  EXPECT_EQ(budget.used(), 100u);
  budget.Release(60);
  EXPECT_TRUE(budget.Reserve(60));
  EXPECT_EQ(budget.refused(), 1u);
}

}  // namespace
}  // namespace engram
