#include "core/job_queue.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

#include "common/clock.h"

namespace engram {
namespace {

using std::chrono::milliseconds;

// Records which jobs ran, in order, and when by the queue's FakeClock: delays pass when a test
// advances the clock, never by sleeping.
class JobQueueTest : public ::testing::Test {
 protected:
  struct Ran {
    int job;
    Clock::SteadyTime at;
  };

  void Start(int workers, std::function<void(int&)> also = {}) {
    queue_.Start({.workers = workers, .name = "test-jobs", .clock = &clock_},
                 [this, also](int& job) {
                   if (also) also(job);
                   std::lock_guard<std::mutex> lock(mu_);
                   ran_.push_back({job, clock_.SteadyNow()});
                 });
  }
  // Waits (at most 20 s of real time) until `n` jobs ran; returns what ran.
  std::vector<Ran> WaitFor(size_t n) {
    if (!Eventually([&] { return Snapshot().size() >= n; })) {
      ADD_FAILURE() << "only " << Snapshot().size() << " of " << n << " jobs ran";
    }
    return Snapshot();
  }
  // Waits until the workers have looked at the queue again and found nothing due: after that,
  // what has not run was held back by its due time.
  void WaitUntilIdle() {
    const uint64_t seen = clock_.waits();
    EXPECT_TRUE(Eventually([&] { return clock_.waits() >= seen + 2; }));
  }
  static bool Eventually(const std::function<bool()>& ready) {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
    while (!ready()) {
      if (std::chrono::steady_clock::now() > deadline) return false;
      std::this_thread::yield();
    }
    return true;
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

  FakeClock clock_;
  std::mutex mu_;
  std::vector<Ran> ran_;  // guarded by mu_
  // Declared last: its workers stop before the members they use go away.
  JobQueue<int> queue_;
};

TEST_F(JobQueueTest, DelayedJobRunsOnlyAfterItsDelay) {
  Start(2);
  const auto pushed = clock_.SteadyNow();
  queue_.PushAfter(1, milliseconds(400));
  WaitUntilIdle();
  clock_.Advance(milliseconds(399));
  WaitUntilIdle();
  EXPECT_TRUE(Snapshot().empty()) << "ran before its delay";
  clock_.Advance(milliseconds(1));
  auto ran = WaitFor(1);
  ASSERT_EQ(ran.size(), 1u);
  EXPECT_EQ(ran[0].at - pushed, milliseconds(400));
  EXPECT_TRUE(Eventually([&] { return queue_.pending() == 0; }));
}

TEST_F(JobQueueTest, PendingCountsDelayedJobs) {
  Start(1);
  queue_.PushAfter(1, milliseconds(300));
  queue_.PushAfter(2, milliseconds(300), 5);
  EXPECT_EQ(queue_.pending(), 2u);
  WaitUntilIdle();
  EXPECT_EQ(queue_.pending(), 2u);
  clock_.Advance(milliseconds(300));
  WaitFor(2);
  // The worker releases its job just after the callback returns.
  EXPECT_TRUE(Eventually([&] { return queue_.pending() == 0; }));
}

TEST_F(JobQueueTest, UnstripedJobPushedLaterRunsBeforeADelayedOne) {
  Start(1);
  queue_.PushAfter(1, milliseconds(500));
  queue_.Push(2);
  EXPECT_EQ(Order(WaitFor(1)), (std::vector<int>{2}));
  clock_.Advance(milliseconds(500));
  EXPECT_EQ(Order(WaitFor(2)), (std::vector<int>{2, 1}));
}

TEST_F(JobQueueTest, OtherStripesRunPastADelayedJob) {
  Start(1);
  queue_.PushAfter(1, milliseconds(500), 7);
  queue_.Push(2, 8);
  EXPECT_EQ(Order(WaitFor(1)), (std::vector<int>{2}));
  clock_.Advance(milliseconds(500));
  EXPECT_EQ(Order(WaitFor(2)), (std::vector<int>{2, 1}));
}

TEST_F(JobQueueTest, LaterJobOfTheSameStripeWaitsBehindADelayedOne) {
  Start(2);
  const auto pushed = clock_.SteadyNow();
  queue_.PushAfter(1, milliseconds(400), 7);
  queue_.Push(2, 7);
  WaitUntilIdle();
  EXPECT_TRUE(Snapshot().empty()) << "job 2 overtook the delayed job of its stripe";
  clock_.Advance(milliseconds(400));
  auto ran = WaitFor(2);
  ASSERT_EQ(Order(ran), (std::vector<int>{1, 2}));
  EXPECT_EQ(ran[1].at - pushed, milliseconds(400));
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
  WaitFor(1);
  WaitUntilIdle();
  EXPECT_EQ(Order(Snapshot()), (std::vector<int>{1})) << "job 2 ran in the retry's pause";
  clock_.Advance(milliseconds(300));
  EXPECT_EQ(Order(WaitFor(3)), (std::vector<int>{1, 1, 2}));
  queue_.Shutdown();  // before `retried` goes away
}

// The system clock, counting the waits for a deadline: Shutdown must end real waits.
class CountingClock final : public Clock {
 public:
  SteadyTime SteadyNow() const override { return RealClock()->SteadyNow(); }
  int64_t WallMicros() const override { return RealClock()->WallMicros(); }
  void WaitUntil(CondVar* cv, Mutex* mu, SteadyTime deadline) const override REQUIRES(mu) {
    waits.fetch_add(1);
    RealClock()->WaitUntil(cv, mu, deadline);
  }
  mutable std::atomic<int> waits{0};
};

// The poll thread of a shared store waits on its own: a push wakes a worker, never only the poll
// thread (which would leave the job queued until some later push).
TEST_F(JobQueueTest, APushWakesAWorkerWhileThePollThreadWaits) {
  std::atomic<int> polls{0};
  queue_.Start(
      {.workers = 1, .poll_interval = std::chrono::hours(1), .name = "test-jobs", .clock = &clock_},
      [this](int& job) {
        std::lock_guard<std::mutex> lock(mu_);
        ran_.push_back({job, clock_.SteadyNow()});
      },
      {}, [&] { ++polls; });
  for (int i = 0; i < 50; ++i) {
    queue_.Push(i);
    // Waits at most 20 s: without the fix a job stays queued for good here (no idle callback, and
    // the fake clock never brings the poll thread's hour).
    ASSERT_EQ(WaitFor(static_cast<size_t>(i) + 1).size(), static_cast<size_t>(i) + 1);
  }
  EXPECT_EQ(polls, 0);  // the fake hour never passed
}

TEST(JobQueueShutdownTest, ShutdownDropsDelayedJobsPromptly) {
  CountingClock clock;
  std::atomic<int> ran{0};
  JobQueue<int> queue;
  queue.Start({.workers = 2, .name = "test-jobs", .clock = &clock}, [&](int&) { ++ran; });
  queue.PushAfter(1, std::chrono::seconds(10));
  queue.PushAfter(2, std::chrono::seconds(10), 4);
  EXPECT_EQ(queue.pending(), 2u);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  while (clock.waits < 2 && std::chrono::steady_clock::now() < deadline) std::this_thread::yield();
  ASSERT_GE(clock.waits, 2) << "the workers never waited for the due time";
  const auto started = std::chrono::steady_clock::now();
  queue.Shutdown();
  EXPECT_LT(std::chrono::steady_clock::now() - started, std::chrono::seconds(2));
  EXPECT_EQ(ran, 0);
}

}  // namespace
}  // namespace engram
