// JobQueue: the worker pool behind Engram's durable asynchronous jobs (memory events, skill tasks,
// knowledge-base documents). The jobs themselves are rows in the store; this queue only holds what
// the workers should run next, so a crash loses nothing: the owning service pushes its unfinished
// rows again at its next start.
//
// Ordering: jobs pushed with the same stripe run one at a time and in push order, delayed jobs
// aside (a scope's events must not overtake each other: "lives in Berlin" then "moved to Lisbon");
// jobs without a stripe run as soon as a worker is free. An optional idle callback runs on a
// worker when no job arrived for `idle_interval` (periodic housekeeping such as purging expired
// memories). An optional poll callback runs on its own thread every `poll_interval` whatever the
// load: on a shared store it claims the jobs of nodes that died (their lease ran out) and pushes
// them.
//
// Delayed jobs (PushAfter) are for a job that ran and must run again later, typically because the
// store could not be read or written for a moment: its node keeps renewing the job's lease, so no
// other node takes it over, and no restart is coming to resume it. A delayed job becomes runnable
// once its delay has passed; no worker is held meanwhile. It goes ahead of the jobs of its stripe
// still queued and its stripe waits with it: a retried event of a scope still runs before that
// scope's later events. Unstriped jobs and other stripes run past it.
//
// Thread-safety: all methods are safe to call concurrently. Shutdown (also run by the destructor)
// stops taking jobs and waits for the running ones; jobs still queued, delayed ones included, are
// dropped.
#pragma once

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <deque>
#include <functional>
#include <optional>
#include <set>
#include <thread>
#include <utility>
#include <vector>

#include "common/clock.h"
#include "common/mutex.h"
#include "common/thread_util.h"

namespace engram {

// The longest pause before a job whose store read or write failed runs again (services use
// min(their job poll interval, this)): short enough that a passing error costs little latency,
// long enough that an outage of the store does not become a busy loop.
inline constexpr std::chrono::milliseconds kJobRetryPause{1000};

template <typename Job>
class JobQueue {
 public:
  struct Options {
    int workers = 1;
    std::chrono::milliseconds idle_interval{0};  // 0: no idle callback
    std::chrono::milliseconds poll_interval{0};  // 0: no poll callback
    const char* name = "jobs";                   // thread name (the poll thread's is "poll")
    // Jobs are background work: their workers run at a raised nice value so that the threads
    // answering requests get the CPU first (measured: V4 add acknowledgement p50 1.8 → 1.3 ms
    // with event extraction running beside it; the events drained no slower).
    int nice = 10;
    const Clock* clock = nullptr;  // due times, idle and poll intervals; null: RealClock()
  };

  JobQueue() = default;
  ~JobQueue() { Shutdown(); }
  JobQueue(const JobQueue&) = delete;
  JobQueue& operator=(const JobQueue&) = delete;

  // Starts the workers (once; later calls do nothing). `run` is called on a worker for each job;
  // `idle` (may be empty) as described above.
  // `poll` (may be empty) runs every options.poll_interval on a thread of its own.
  void Start(Options options, std::function<void(Job&)> run, std::function<void()> idle = {},
             std::function<void()> poll = {}) {
    MutexLock lock(&mu_);
    if (!workers_.empty() || stopping_) return;
    options_ = options;
    clock_ = options_.clock ? options_.clock : RealClock();
    run_ = std::move(run);
    idle_ = std::move(idle);
    poll_ = std::move(poll);
    for (int i = 0; i < std::max(1, options_.workers); ++i) {
      workers_.emplace_back([this] {
        NameThisThread(options_.name);
        LowerThisThreadPriority(options_.nice);
        WorkerLoop();
      });
    }
    if (poll_ && options_.poll_interval.count() > 0) {
      workers_.emplace_back([this] {
        NameThisThread("poll");
        PollLoop();
      });
    }
  }

  void Push(Job job, std::optional<size_t> stripe = std::nullopt) {
    {
      MutexLock lock(&mu_);
      queue_.push_back({std::move(job), stripe, Clock::SteadyTime::min()});
    }
    cv_.Signal();
  }

  // Queues `job` to run once `delay` has passed, ahead of the jobs of `stripe` already queued
  // (see the ordering rules above). Typically called by a running job about itself.
  void PushAfter(Job job, std::chrono::milliseconds delay,
                 std::optional<size_t> stripe = std::nullopt) {
    {
      MutexLock lock(&mu_);
      Entry entry{std::move(job), stripe, clock_->SteadyNow() + delay};
      auto at = queue_.end();
      if (stripe) {
        at = std::find_if(queue_.begin(), queue_.end(),
                          [&](const Entry& e) { return e.stripe == stripe; });
      }
      queue_.insert(at, std::move(entry));
    }
    // A waiting worker wakes to wait for the new due time instead of its earlier deadline.
    cv_.Signal();
  }

  // How long a job that ran and must run again after a passing store error waits (PushAfter; see
  // "Delayed jobs" above): min(options.poll_interval, kJobRetryPause).
  std::chrono::milliseconds retry_pause() const {
    MutexLock lock(&mu_);
    return std::min(options_.poll_interval, kJobRetryPause);
  }

  void Shutdown() {
    std::vector<std::thread> workers;
    {
      MutexLock lock(&mu_);
      stopping_ = true;
      workers.swap(workers_);
    }
    cv_.SignalAll();
    poll_cv_.SignalAll();
    for (auto& w : workers) {
      if (w.joinable()) w.join();
    }
  }

  bool stopping() const {
    MutexLock lock(&mu_);
    return stopping_;
  }

  // Jobs queued (delayed ones included) plus jobs running (0 = idle).
  size_t pending() const {
    MutexLock lock(&mu_);
    return queue_.size() + running_;
  }

 private:
  struct Entry {
    Job job;
    std::optional<size_t> stripe;
    Clock::SteadyTime due;  // runnable from then on (min: at once)
  };

  // The first queued job a worker may run at `now`: a striped job waits while an earlier job of
  // its stripe runs, is still queued or is delayed; a delayed job waits for its due time. Sets
  // *next_due to the earliest due time still ahead (unchanged when none).
  std::optional<Entry> TakeRunnableLocked(Clock::SteadyTime now,
                                          std::optional<Clock::SteadyTime>* next_due)
      REQUIRES(mu_) {
    std::set<size_t> waiting;
    for (auto it = queue_.begin(); it != queue_.end(); ++it) {
      const bool due = it->due <= now;
      if (!due && (!*next_due || it->due < **next_due)) *next_due = it->due;
      if (it->stripe) {
        if (!due || busy_.count(*it->stripe) || waiting.count(*it->stripe)) {
          waiting.insert(*it->stripe);
          continue;
        }
        busy_.insert(*it->stripe);
      } else if (!due) {
        continue;
      }
      Entry entry = std::move(*it);
      queue_.erase(it);
      ++running_;
      return entry;
    }
    return std::nullopt;
  }

  void PollLoop() {
    MutexLock lock(&mu_);
    for (;;) {
      const auto due = clock_->SteadyNow() + options_.poll_interval;
      // Until `due` or Shutdown. The loop waits on a condition variable of its own: on cv_ it
      // could take the one signal of a push meant for a worker, and the job would stay queued.
      while (!stopping_ && clock_->SteadyNow() < due) clock_->WaitUntil(&poll_cv_, &mu_, due);
      if (stopping_) return;
      lock.Unlock();
      poll_();
      lock.Lock();
    }
  }

  void WorkerLoop() {
    const bool has_idle = idle_ && options_.idle_interval.count() > 0;
    auto next_idle = clock_->SteadyNow() + options_.idle_interval;
    for (;;) {
      std::optional<Entry> entry;
      {
        MutexLock lock(&mu_);
        for (;;) {
          if (stopping_) return;
          const auto now = clock_->SteadyNow();
          std::optional<Clock::SteadyTime> wake;
          entry = TakeRunnableLocked(now, &wake);
          if (entry) break;
          if (has_idle && now >= next_idle) {
            lock.Unlock();
            idle_();
            next_idle = clock_->SteadyNow() + options_.idle_interval;
            lock.Lock();
            continue;
          }
          if (has_idle && (!wake || next_idle < *wake)) wake = next_idle;
          // Woken early by a push, a finished job or Shutdown; the loop checks again.
          if (wake) {
            clock_->WaitUntil(&cv_, &mu_, *wake);
          } else {
            cv_.Wait(&mu_);
          }
        }
      }
      run_(entry->job);
      {
        MutexLock lock(&mu_);
        Release(*entry);
      }
      // A finished job may let a waiting job of its stripe run.
      cv_.SignalAll();
    }
  }

  void Release(const Entry& entry) REQUIRES(mu_) {
    --running_;
    if (entry.stripe) busy_.erase(*entry.stripe);
  }

  mutable Mutex mu_;
  CondVar cv_;                               // workers: a job pushed or finished, Shutdown
  CondVar poll_cv_;                          // the poll thread: Shutdown
  Options options_;                          // set in Start, then read-only
  const Clock* clock_ = RealClock();         // set in Start, then read-only
  std::function<void(Job&)> run_;            // set in Start, then read-only
  std::function<void()> idle_;               // set in Start, then read-only
  std::function<void()> poll_;               // set in Start, then read-only
  std::deque<Entry> queue_ GUARDED_BY(mu_);  // delayed entries included
  std::set<size_t> busy_ GUARDED_BY(mu_);    // stripes with a running job
  size_t running_ GUARDED_BY(mu_) = 0;
  bool stopping_ GUARDED_BY(mu_) = false;
  std::vector<std::thread> workers_ GUARDED_BY(mu_);
};

}  // namespace engram
