#include "core/graph_saver.h"

#include <spdlog/spdlog.h>

#include <utility>

#include "common/thread_util.h"

namespace engram {

GraphSaver::GraphSaver(GraphSaverOptions options)
    : options_{.capacity = options.capacity > 0 ? options.capacity : 1} {
  thread_ = std::thread([this] { Run(); });
}

GraphSaver::~GraphSaver() {
  {
    MutexLock lock(&mu_);
    stopping_ = true;
    changed_.SignalAll();
  }
  thread_.join();
}

void GraphSaver::Enqueue(GraphSaveJob job) {
  MutexLock lock(&mu_);
  while (queue_.size() + (running_ ? 1 : 0) >= options_.capacity) changed_.Wait(&mu_);
  queue_.push_back(std::move(job));
  changed_.SignalAll();
}

Status GraphSaver::Save(const GraphSaveJob& save) {
  MutexLock lock(&save_mu_);
  return save();
}

void GraphSaver::Flush() {
  MutexLock lock(&mu_);
  while (!queue_.empty() || running_) changed_.Wait(&mu_);
}

void GraphSaver::Run() {
  NameThisThread("engram-graphs");
  for (;;) {
    GraphSaveJob job;
    {
      MutexLock lock(&mu_);
      // The queue is drained before stopping: a clean stop keeps every graph it dropped.
      while (queue_.empty() && !stopping_) changed_.Wait(&mu_);
      if (queue_.empty()) return;
      job = std::move(queue_.front());
      queue_.pop_front();
      running_ = true;
    }
    Status st;
    {
      MutexLock lock(&save_mu_);
      st = job();
    }
    if (!st.ok()) {
      failures_.fetch_add(1);
      spdlog::warn("vector graph of a dropped shard not saved (it is rebuilt at its next load): {}",
                   st.ToString());
    }
    job = nullptr;  // the shard goes here, before the next job may be queued
    MutexLock lock(&mu_);
    running_ = false;
    changed_.SignalAll();
  }
}

}  // namespace engram
