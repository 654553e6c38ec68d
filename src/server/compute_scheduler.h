// ComputeScheduler: runs compute-bound requests (searches on a local store and model) on the I/O
// thread that read them, at most `slots` at once. A request that finds a free slot runs at once
// on the caller's thread (no hand-off); the others wait in arrival order, and each finishing
// request hands its slot to the next one, which runs as a task of its own through `post` (on an
// I/O thread), never inline behind the one just served: that would keep its connection from
// writing its answer and reading its next request until the queue ran dry.
//
// It knows nothing of HTTP: tasks are closures, `post` is how the transport runs one on an I/O
// thread. Thread-safety: every method may be called from any thread. Tasks must not throw.
#pragma once

#include <atomic>
#include <cstddef>
#include <deque>
#include <functional>

#include "common/mutex.h"

namespace engram {

class ComputeScheduler {
 public:
  using Task = std::function<void()>;
  // Runs `task` on an I/O thread, later.
  using Post = std::function<void(Task task)>;

  ComputeScheduler(int slots, size_t max_queued, Post post);
  ComputeScheduler(const ComputeScheduler&) = delete;
  ComputeScheduler& operator=(const ComputeScheduler&) = delete;

  // Runs the task now when a slot is free, else queues it; false (task not taken) when
  // `max_queued` tasks already wait.
  bool RunOrQueue(Task task);
  // Drops the tasks waiting for a slot (destroyed outside the lock: one may hold the last
  // reference to its connection).
  void DiscardPending();
  // As DiscardPending, and from now on a slot passed on starts nothing: the transport's I/O
  // threads have stopped and only drain leftover handlers against closed connections.
  void Close();

  size_t queued() const;

 private:
  // Runs a task on this thread, then passes its slot on.
  void Run(const Task& task) EXCLUDES(mu_);
  void Next() EXCLUDES(mu_);

  const int slots_;
  const size_t max_queued_;
  const Post post_;
  mutable Mutex mu_;
  std::deque<Task> pending_ GUARDED_BY(mu_);
  int running_ GUARDED_BY(mu_) = 0;
  std::atomic<bool> closed_{false};
};

}  // namespace engram
