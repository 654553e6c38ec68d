#include "core/vector_backfill.h"

#include <spdlog/spdlog.h>

#include "common/thread_util.h"

namespace engram {

VectorBackfill::VectorBackfill(Store* store, const Embedder* embedder,
                               VectorBackfillOptions options)
    : store_(store), embedder_(embedder), options_(options) {
  running_ = static_cast<size_t>(std::max(1, options_.threads));
  for (size_t i = 0; i < running_; ++i) {
    workers_.emplace_back([this] {
      NameThisThread("vector-embed");
      LowerThisThreadPriority(options_.nice);
      Run();
    });
  }
}

VectorBackfill::~VectorBackfill() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
  }
  cv_.notify_all();
  room_cv_.notify_all();
  for (auto& w : workers_) w.join();
}

bool VectorBackfill::Shutdown(std::chrono::milliseconds grace) {
  std::unique_lock<std::mutex> lock(mu_);
  stopping_ = true;
  cv_.notify_all();
  room_cv_.notify_all();
  // Store calls are short: always wait for them, so the store can be closed after this returns.
  cv_.wait(lock, [this] { return storing_ == 0; });
  return cv_.wait_for(lock, grace, [this] { return running_ == 0; });
}

void VectorBackfill::EnqueueFresh(std::shared_ptr<ScopeShard> shard,
                                  std::vector<std::pair<int64_t, std::string>> items) {
  if (items.empty()) return;
  const size_t n = items.size();
  const size_t bytes = TextBytes(items);
  {
    std::unique_lock<std::mutex> lock(mu_);
    room_cv_.wait(lock, [&] {
      return stopping_ || pending_fresh_ == 0 || pending_fresh_ + n <= options_.max_pending_fresh;
    });
    pending_fresh_ += n;
    pending_ += n;
  }
  shard->AddPendingVectors(n, bytes);
  Queue(std::move(shard), std::move(items), /*fresh=*/true);
}

void VectorBackfill::EnqueueBackfill(std::shared_ptr<ScopeShard> shard) {
  auto missing = shard->MissingVectors();
  if (missing.empty()) return;
  const size_t n = missing.size();
  {
    std::lock_guard<std::mutex> lock(mu_);
    pending_ += n;
  }
  Queue(std::move(shard), std::move(missing), /*fresh=*/false);
  spdlog::info("vector backfill: {} memories queued", n);
}

void VectorBackfill::Queue(std::shared_ptr<ScopeShard> shard,
                           std::vector<std::pair<int64_t, std::string>> items, bool fresh) {
  // Split into batches so several workers can share a large write.
  std::vector<Job> jobs;
  for (size_t i = 0; i < items.size(); i += options_.batch_size) {
    Job job{shard, {}, fresh};
    size_t end = std::min(items.size(), i + options_.batch_size);
    for (size_t j = i; j < end; ++j) job.items.push_back(std::move(items[j]));
    jobs.push_back(std::move(job));
  }
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto& queue = fresh ? fresh_ : backfill_;
    for (auto& job : jobs) queue.push_back(std::move(job));
  }
  cv_.notify_all();
}

size_t VectorBackfill::pending() const {
  std::lock_guard<std::mutex> lock(mu_);
  return pending_;
}

void VectorBackfill::Process(Job& job) {
  std::vector<std::string> texts;
  texts.reserve(job.items.size());
  for (const auto& it : job.items) texts.push_back(it.second);
  auto vectors = embedder_->EmbedBatch(texts);
  if (!vectors.ok()) {
    // The memories stay without vectors; the next shard load retries them.
    spdlog::warn("vector backfill: embedding failed: {}", vectors.status().ToString());
    return;
  }
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (stopping_) return;  // shutting down: the store may be closing; recomputed at next start
    ++storing_;
  }
  std::vector<VectorUpdate> updates;
  updates.reserve(job.items.size());
  for (size_t i = 0; i < job.items.size(); ++i) {
    updates.push_back({job.items[i].first, embedder_->model_id(), std::move((*vectors)[i])});
  }
  Status st = store_->PutVectors(updates);
  {
    std::lock_guard<std::mutex> lock(mu_);
    --storing_;
  }
  cv_.notify_all();
  if (!st.ok()) {
    spdlog::warn("vector backfill: store failed: {}", st.ToString());
    return;
  }
  job.shard->ApplyVectors(updates);
}

void VectorBackfill::Run() {
  for (;;) {
    Job job;
    {
      std::unique_lock<std::mutex> lock(mu_);
      cv_.wait(lock, [this] { return stopping_ || !fresh_.empty() || !backfill_.empty(); });
      if (stopping_) {
        --running_;
        cv_.notify_all();
        return;
      }
      auto& from = fresh_.empty() ? backfill_ : fresh_;
      job = std::move(from.front());
      from.pop_front();
    }
    Process(job);
    // Pending counts drop whether or not the job succeeded, so waiting searches never hang.
    if (job.fresh) job.shard->DonePendingVectors(job.items.size(), TextBytes(job.items));
    std::lock_guard<std::mutex> lock(mu_);
    pending_ -= job.items.size();
    if (job.fresh) {
      pending_fresh_ -= job.items.size();
      room_cv_.notify_all();
    }
  }
}

}  // namespace engram
