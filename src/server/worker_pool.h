// WorkerPool: a fixed set of threads draining a bounded FIFO of tasks.
//
// The HTTP server runs handlers here so that blocking work (fsync, model calls) never stalls the
// I/O threads. The queue is bounded so that overload turns into fast 503s instead of memory growth.
// Thread-safety: all methods may be called from any thread.
#pragma once

#include <cstddef>
#include <deque>
#include <functional>
#include <thread>
#include <vector>

#include "common/mutex.h"

namespace engram {

class WorkerPool {
 public:
  // Starts `threads` (at least 1) threads; at most `max_queued` tasks wait for a thread.
  WorkerPool(int threads, size_t max_queued);
  ~WorkerPool();  // Shutdown(/*discard_pending=*/true)
  WorkerPool(const WorkerPool&) = delete;
  WorkerPool& operator=(const WorkerPool&) = delete;

  // Queues a task; false (task not taken) when the queue is full or the pool is shut down.
  // Tasks must not throw.
  bool TrySubmit(std::function<void()> task);
  // Drops the tasks not started yet (they are destroyed outside the lock).
  void DiscardPending();
  // Stops taking tasks, runs (or discards) the queued ones, waits for running ones, joins.
  void Shutdown(bool discard_pending);
  size_t queued() const;

 private:
  void Run() EXCLUDES(mu_);

  const size_t max_queued_;
  mutable Mutex mu_;
  CondVar cv_;
  std::deque<std::function<void()>> queue_ GUARDED_BY(mu_);
  bool shutting_down_ GUARDED_BY(mu_) = false;
  std::vector<std::thread> threads_;
};

}  // namespace engram
