#include "core/job_queue.h"

#include <gtest/gtest.h>

#include <chrono>
#include <mutex>
#include <thread>
#include <vector>

namespace engram {
namespace {

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

// Records which jobs ran, in order, and when. Margins are generous: these tests run on loaded
// machines with few cores.
class JobQueueTest : public ::testing::Test {
 protected:
  struct Ran {
    int job;
    Clock::time_point at;
  };

  void Start(int workers, std::function<void(int&)> also = {}) {
    queue_.Start({.workers = workers, .name = "test-jobs"}, [this, also](int& job) {
      if (also) also(job);
      std::lock_guard<std::mutex> lock(mu_);
      ran_.push_back({job, Clock::now()});
    });
  }
  // Waits (at most 20 s) until `n` jobs ran; returns what ran.
  std::vector<Ran> WaitFor(size_t n) {
    const auto deadline = Clock::now() + std::chrono::seconds(20);
    while (Clock::now() < deadline) {
      {
        std::lock_guard<std::mutex> lock(mu_);
        if (ran_.size() >= n) return ran_;
      }
      std::this_thread::sleep_for(milliseconds(5));
    }
    ADD_FAILURE() << "only " << Snapshot().size() << " of " << n << " jobs ran";
    return Snapshot();
  }
  std::vector<Ran> Snapshot() {
    std::lock_guard<std::mutex> lock(mu_);
    return ran_;
  }
  static std::vector<int> Order(const std::vector<Ran>& ran) {
    std::vector<int> order;
    for (const Ran& r : ran) order.push_back(r.job);
    return order;
  }

  std::mutex mu_;
  std::vector<Ran> ran_;  // guarded by mu_
  // Declared last: its workers stop before the members they use go away.
  JobQueue<int> queue_;
};

TEST_F(JobQueueTest, DelayedJobRunsOnlyAfterItsDelay) {
  Start(2);
  const auto pushed = Clock::now();
  queue_.PushAfter(1, milliseconds(400));
  std::this_thread::sleep_for(milliseconds(100));
  EXPECT_TRUE(Snapshot().empty()) << "ran before its delay";
  auto ran = WaitFor(1);
  ASSERT_EQ(ran.size(), 1u);
  EXPECT_GE(ran[0].at - pushed, milliseconds(400));
  EXPECT_EQ(queue_.pending(), 0u);
}

TEST_F(JobQueueTest, PendingCountsDelayedJobs) {
  Start(1);
  queue_.PushAfter(1, milliseconds(300));
  queue_.PushAfter(2, milliseconds(300), 5);
  EXPECT_EQ(queue_.pending(), 2u);
  WaitFor(2);
  // The worker releases its job just after the callback returns.
  const auto deadline = Clock::now() + std::chrono::seconds(10);
  while (queue_.pending() != 0 && Clock::now() < deadline) {
    std::this_thread::sleep_for(milliseconds(5));
  }
  EXPECT_EQ(queue_.pending(), 0u);
}

TEST_F(JobQueueTest, UnstripedJobPushedLaterRunsBeforeADelayedOne) {
  Start(1);
  queue_.PushAfter(1, milliseconds(500));
  queue_.Push(2);
  EXPECT_EQ(Order(WaitFor(2)), (std::vector<int>{2, 1}));
}

TEST_F(JobQueueTest, OtherStripesRunPastADelayedJob) {
  Start(1);
  queue_.PushAfter(1, milliseconds(500), 7);
  queue_.Push(2, 8);
  EXPECT_EQ(Order(WaitFor(2)), (std::vector<int>{2, 1}));
}

TEST_F(JobQueueTest, LaterJobOfTheSameStripeWaitsBehindADelayedOne) {
  Start(2);
  const auto pushed = Clock::now();
  queue_.PushAfter(1, milliseconds(400), 7);
  queue_.Push(2, 7);
  auto ran = WaitFor(2);
  ASSERT_EQ(Order(ran), (std::vector<int>{1, 2}));
  EXPECT_GE(ran[1].at - pushed, milliseconds(400));
}

// The retry case: a running job of a stripe queues itself again while a later job of its stripe
// is queued. The retry keeps its place: the later job runs after it, not in the pause.
TEST_F(JobQueueTest, RetriedJobStillRunsBeforeTheLaterJobsOfItsStripe) {
  bool retried = false;  // only touched by the one job of stripe 3 running at a time
  Start(2, [&](int& job) {
    if (job == 1 && !retried) {
      retried = true;
      queue_.PushAfter(1, milliseconds(300), 3);
    }
  });
  queue_.Push(1, 3);
  queue_.Push(2, 3);
  EXPECT_EQ(Order(WaitFor(3)), (std::vector<int>{1, 1, 2}));
  queue_.Shutdown();  // before `retried` goes away
}

TEST_F(JobQueueTest, ShutdownDropsDelayedJobsPromptly) {
  Start(2);
  queue_.PushAfter(1, std::chrono::seconds(10));
  queue_.PushAfter(2, std::chrono::seconds(10), 4);
  EXPECT_EQ(queue_.pending(), 2u);
  std::this_thread::sleep_for(milliseconds(50));  // the workers wait for the due time
  const auto started = Clock::now();
  queue_.Shutdown();
  EXPECT_LT(Clock::now() - started, std::chrono::seconds(2));
  EXPECT_TRUE(Snapshot().empty());
}

}  // namespace
}  // namespace engram
