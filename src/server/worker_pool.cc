#include "server/worker_pool.h"

#include <algorithm>
#include <utility>

#include "common/thread_util.h"

namespace engram {

WorkerPool::WorkerPool(int threads, size_t max_queued) : max_queued_(max_queued) {
  const int n = std::max(1, threads);
  threads_.reserve(n);
  for (int i = 0; i < n; ++i) {
    threads_.emplace_back([this] {
      NameThisThread("http-worker");
      Run();
    });
  }
}

WorkerPool::~WorkerPool() { Shutdown(/*discard_pending=*/true); }

bool WorkerPool::TrySubmit(std::function<void()> task) {
  {
    MutexLock lock(&mu_);
    if (shutting_down_ || queue_.size() >= max_queued_) return false;
    queue_.push_back(std::move(task));
  }
  cv_.Signal();
  return true;
}

void WorkerPool::DiscardPending() {
  std::deque<std::function<void()>> dropped;
  {
    MutexLock lock(&mu_);
    dropped.swap(queue_);
  }
  // `dropped` dies here, outside the lock: task destructors may release resources that take locks.
}

void WorkerPool::Shutdown(bool discard_pending) {
  if (discard_pending) DiscardPending();
  {
    MutexLock lock(&mu_);
    shutting_down_ = true;
  }
  cv_.SignalAll();
  for (auto& t : threads_) {
    if (t.joinable()) t.join();
  }
  threads_.clear();
}

size_t WorkerPool::queued() const {
  MutexLock lock(&mu_);
  return queue_.size();
}

void WorkerPool::Run() {
  for (;;) {
    std::function<void()> task;
    {
      MutexLock lock(&mu_);
      while (!shutting_down_ && queue_.empty()) cv_.Wait(&mu_);
      if (queue_.empty()) return;  // shutting down and drained
      task = std::move(queue_.front());
      queue_.pop_front();
    }
    task();
  }
}

}  // namespace engram
