// The graph saver: jobs run on its thread, at most `capacity` at once, one save at a time with
// the caller's, failures counted, and the jobs still waiting run before it is destroyed.
#include "core/graph_saver.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <future>
#include <thread>

namespace engram {
namespace {

TEST(GraphSaverTest, AFullSaverMakesEnqueueWaitAndRunsEveryJob) {
  std::promise<void> release;
  std::shared_future<void> released = release.get_future().share();
  std::atomic<int> ran{0};
  GraphSaver saver({.capacity = 1});
  saver.Enqueue([&] {
    released.wait();
    ++ran;
    return Status::Ok();
  });
  // One job runs: a second has no room until it is done.
  auto second = std::async(std::launch::async, [&] {
    saver.Enqueue([&] {
      ++ran;
      return Status::Unavailable("disk full");
    });
  });
  EXPECT_EQ(second.wait_for(std::chrono::milliseconds(200)), std::future_status::timeout);
  release.set_value();
  ASSERT_EQ(second.wait_for(std::chrono::seconds(30)), std::future_status::ready);
  saver.Flush();
  EXPECT_EQ(ran, 2);
  EXPECT_EQ(saver.failures(), 1);
}

TEST(GraphSaverTest, ACallersSaveWaitsForTheRunningJob) {
  std::promise<void> release;
  std::shared_future<void> released = release.get_future().share();
  std::atomic<bool> job_done{false};
  GraphSaver saver({});
  std::promise<void> started;
  saver.Enqueue([&] {
    started.set_value();
    released.wait();
    job_done = true;
    return Status::Ok();
  });
  started.get_future().wait();
  auto own = std::async(std::launch::async, [&] {
    return saver.Save([&] { return job_done ? Status::Ok() : Status::Internal("overlapped"); });
  });
  EXPECT_EQ(own.wait_for(std::chrono::milliseconds(200)), std::future_status::timeout);
  release.set_value();
  EXPECT_TRUE(own.get().ok());
}

TEST(GraphSaverTest, TheDestructorRunsTheJobsStillWaiting) {
  std::atomic<int> ran{0};
  {
    GraphSaver saver({.capacity = 3});
    for (int i = 0; i < 3; ++i) {
      saver.Enqueue([&] {
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
        ++ran;
        return Status::Ok();
      });
    }
  }
  EXPECT_EQ(ran, 3);
}

}  // namespace
}  // namespace engram
