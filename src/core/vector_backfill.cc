#include "core/vector_backfill.h"

#include <spdlog/spdlog.h>

#include <iterator>

#include "common/thread_util.h"
#include "core/passage_vectors.h"

namespace engram {

VectorBackfill::VectorBackfill(MemoryVectors* store, const Embedder* embedder,
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
    MutexLock lock(&mu_);
    stopping_ = true;
  }
  cv_.SignalAll();
  room_cv_.SignalAll();
  for (auto& w : workers_) w.join();
}

bool VectorBackfill::Shutdown(std::chrono::milliseconds grace) {
  MutexLock lock(&mu_);
  stopping_ = true;
  cv_.SignalAll();
  room_cv_.SignalAll();
  // Store calls are short: always wait for them, so the store can be closed after this returns.
  while (storing_ != 0) cv_.Wait(&mu_);
  const auto deadline = std::chrono::steady_clock::now() + grace;
  while (running_ != 0) {
    if (!cv_.WaitUntil(&mu_, deadline)) break;
  }
  return running_ == 0;
}

bool VectorBackfill::HasRoomLocked(size_t count, size_t bytes) const {
  return stopping_ || pending_fresh_ == 0 ||
         (pending_fresh_ + count <= options_.max_pending_fresh &&
          pending_fresh_bytes_ + bytes <= options_.max_pending_fresh_bytes);
}

bool VectorBackfill::AdmitFresh(size_t count, size_t bytes) {
  MutexLock lock(&mu_);
  const auto deadline = std::chrono::steady_clock::now() + options_.admission_wait;
  while (!HasRoomLocked(count, bytes)) {
    if (!room_cv_.WaitUntil(&mu_, deadline)) break;
  }
  const bool room = HasRoomLocked(count, bytes);
  if (room) {
    pending_fresh_ += count;
    pending_fresh_bytes_ += bytes;
  }
  return room;
}

void VectorBackfill::ReleaseFresh(size_t count, size_t bytes) {
  MutexLock lock(&mu_);
  pending_fresh_ -= std::min(count, pending_fresh_);
  pending_fresh_bytes_ -= std::min(bytes, pending_fresh_bytes_);
  room_cv_.SignalAll();
}

void VectorBackfill::EnqueueFresh(std::shared_ptr<ScopeShard> shard,
                                  std::vector<std::pair<int64_t, std::string>> items,
                                  size_t reserved_count, size_t reserved_bytes) {
  if (items.empty()) return ReleaseFresh(reserved_count, reserved_bytes);
  const size_t n = items.size();
  const size_t bytes = TextBytes(items);
  {
    MutexLock lock(&mu_);
    // The reservation becomes the queued work (the same memories, normally the same sizes).
    pending_fresh_ = pending_fresh_ - std::min(reserved_count, pending_fresh_) + n;
    pending_fresh_bytes_ =
        pending_fresh_bytes_ - std::min(reserved_bytes, pending_fresh_bytes_) + bytes;
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
    MutexLock lock(&mu_);
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
    MutexLock lock(&mu_);
    auto& queue = fresh ? fresh_ : backfill_;
    for (auto& job : jobs) queue.push_back(std::move(job));
  }
  cv_.SignalAll();
}

size_t VectorBackfill::pending() const {
  MutexLock lock(&mu_);
  return pending_;
}

void VectorBackfill::TakePass(std::vector<Job>& pass) {
  auto& from = fresh_.empty() ? backfill_ : fresh_;
  size_t texts = 0;
  size_t bytes = 0;
  while (!from.empty() && texts < options_.batch_size) {
    Job& front = from.front();
    // Texts of the front job that fit: at least one per pass, however long.
    size_t take = 0;
    while (take < front.items.size() && texts + take < options_.batch_size) {
      const size_t n = front.items[take].second.size();
      if (texts + take > 0 && bytes + n > options_.max_batch_bytes) break;
      bytes += n;
      ++take;
    }
    if (take == 0) break;
    texts += take;
    if (take == front.items.size()) {
      pass.push_back(std::move(front));
      from.pop_front();
      continue;
    }
    // Only a part fits: the rest stays first in the queue for the next pass.
    Job part{front.shard, {}, front.fresh};
    part.items.assign(std::make_move_iterator(front.items.begin()),
                      std::make_move_iterator(front.items.begin() + static_cast<ptrdiff_t>(take)));
    front.items.erase(front.items.begin(), front.items.begin() + static_cast<ptrdiff_t>(take));
    pass.push_back(std::move(part));
    break;
  }
}

void VectorBackfill::Process(std::vector<Job>& pass) {
  std::vector<std::string> texts;
  for (const auto& job : pass) {
    for (const auto& it : job.items) texts.push_back(it.second);
  }
  // A long message gets a vector per passage, stored together (core/passage_vectors.h).
  auto vectors = EmbedPassages(*embedder_, texts);
  if (!vectors.ok()) {
    // The memories stay without vectors; the next shard load retries them.
    spdlog::warn("vector backfill: embedding {} texts failed: {}", texts.size(),
                 vectors.status().ToString());
    return;
  }
  // Vectors are matched to memories by position: a short answer must not shift one scope's
  // vectors onto another scope's memories.
  if (vectors->size() != texts.size()) {
    spdlog::warn("vector backfill: the model returned {} vectors for {} texts", vectors->size(),
                 texts.size());
    return;
  }
  {
    MutexLock lock(&mu_);
    if (stopping_) return;  // shutting down: the store may be closing; recomputed at next start
    ++storing_;
  }
  // One store write for the whole pass (updates are keyed by seq, which is unique across
  // scopes); each shard is then given the vectors of its own memories only.
  std::vector<VectorUpdate> all;
  all.reserve(texts.size());
  size_t at = 0;
  for (const auto& job : pass) {
    for (const auto& it : job.items) {
      all.push_back({it.first, embedder_->model_id(), std::move((*vectors)[at++])});
    }
  }
  Status st = store_->PutVectors(all);
  {
    MutexLock lock(&mu_);
    --storing_;
  }
  cv_.SignalAll();
  if (!st.ok()) {
    spdlog::warn("vector backfill: store failed: {}", st.ToString());
    return;
  }
  auto next = all.begin();
  for (const auto& job : pass) {
    const auto end = next + static_cast<ptrdiff_t>(job.items.size());
    job.shard->ApplyVectors(
        std::vector<VectorUpdate>(std::make_move_iterator(next), std::make_move_iterator(end)));
    next = end;
  }
}

void VectorBackfill::Run() {
  for (;;) {
    std::vector<Job> pass;
    {
      MutexLock lock(&mu_);
      while (!stopping_ && fresh_.empty() && backfill_.empty()) cv_.Wait(&mu_);
      if (stopping_) {
        --running_;
        cv_.SignalAll();
        return;
      }
      TakePass(pass);
    }
    Process(pass);
    // Pending counts drop whether or not the pass succeeded, so waiting searches never hang.
    size_t done = 0;
    size_t done_fresh = 0;
    size_t done_fresh_bytes = 0;
    for (const auto& job : pass) {
      if (job.fresh) {
        const size_t bytes = TextBytes(job.items);
        job.shard->DonePendingVectors(job.items.size(), bytes);
        done_fresh += job.items.size();
        done_fresh_bytes += bytes;
      }
      done += job.items.size();
    }
    MutexLock lock(&mu_);
    pending_ -= done;
    if (done_fresh > 0) {
      pending_fresh_ -= done_fresh;
      pending_fresh_bytes_ -= done_fresh_bytes;
      room_cv_.SignalAll();
    }
  }
}

}  // namespace engram
