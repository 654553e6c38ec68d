#include "server/compute_scheduler.h"

#include <utility>

namespace engram {

ComputeScheduler::ComputeScheduler(int slots, size_t max_queued, Post post)
    : slots_(slots < 1 ? 1 : slots), max_queued_(max_queued), post_(std::move(post)) {}

bool ComputeScheduler::RunOrQueue(Task task) {
  {
    MutexLock lock(&mu_);
    if (running_ >= slots_) {
      if (pending_.size() >= max_queued_) return false;
      pending_.push_back(std::move(task));
      return true;
    }
    ++running_;
  }
  Run(task);
  return true;
}

void ComputeScheduler::Run(const Task& task) {
  task();
  Next();
}

void ComputeScheduler::Next() {
  Task next;
  {
    MutexLock lock(&mu_);
    if (pending_.empty()) {
      --running_;
      return;
    }
    next = std::move(pending_.front());
    pending_.pop_front();
  }
  post_([this, next = std::move(next)]() mutable {
    // After Close the transport drains leftover handlers against closed sockets: a search must
    // not start then.
    if (closed_.load(std::memory_order_acquire)) return;
    Run(next);
  });
}

void ComputeScheduler::Close() {
  closed_.store(true, std::memory_order_release);
  DiscardPending();
}

void ComputeScheduler::DiscardPending() {
  std::deque<Task> dropped;
  {
    MutexLock lock(&mu_);
    dropped.swap(pending_);
  }
}

size_t ComputeScheduler::queued() const {
  MutexLock lock(&mu_);
  return pending_.size();
}

}  // namespace engram
