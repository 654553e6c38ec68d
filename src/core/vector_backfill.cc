#include "core/vector_backfill.h"

#include <spdlog/spdlog.h>

namespace engram {

VectorBackfill::VectorBackfill(Store* store, const Embedder* embedder, size_t batch_size)
    : store_(store), embedder_(embedder), batch_size_(batch_size) {
  worker_ = std::thread([this] { Run(); });
}

VectorBackfill::~VectorBackfill() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
  }
  cv_.notify_all();
  worker_.join();
}

void VectorBackfill::Enqueue(std::shared_ptr<ScopeShard> shard) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    queue_.push_back(std::move(shard));
  }
  cv_.notify_one();
}

size_t VectorBackfill::pending() const {
  std::lock_guard<std::mutex> lock(mu_);
  return pending_docs_;
}

void VectorBackfill::Run() {
  for (;;) {
    std::shared_ptr<ScopeShard> shard;
    {
      std::unique_lock<std::mutex> lock(mu_);
      cv_.wait(lock, [this] { return stopping_ || !queue_.empty(); });
      if (stopping_) return;
      shard = std::move(queue_.front());
      queue_.pop_front();
    }
    auto missing = shard->MissingVectors();
    {
      std::lock_guard<std::mutex> lock(mu_);
      pending_docs_ += missing.size();
    }
    size_t done = 0;
    for (size_t i = 0; i < missing.size(); i += batch_size_) {
      {
        std::lock_guard<std::mutex> lock(mu_);
        if (stopping_) return;
      }
      size_t end = std::min(missing.size(), i + batch_size_);
      std::vector<std::string> texts;
      for (size_t j = i; j < end; ++j) texts.push_back(missing[j].second);
      auto vectors = embedder_->EmbedBatch(texts);
      if (!vectors.ok()) {
        spdlog::warn("vector backfill: embedding failed: {}", vectors.status().ToString());
        break;
      }
      std::vector<VectorUpdate> updates;
      for (size_t j = i; j < end; ++j) {
        updates.push_back({missing[j].first, embedder_->model_id(), std::move((*vectors)[j - i])});
      }
      Status st = store_->PutVectors(updates);
      if (!st.ok()) {
        spdlog::warn("vector backfill: store failed: {}", st.ToString());
        break;
      }
      shard->ApplyVectors(updates);
      done += end - i;
      std::lock_guard<std::mutex> lock(mu_);
      pending_docs_ -= end - i;
    }
    std::lock_guard<std::mutex> lock(mu_);
    pending_docs_ -= std::min(pending_docs_, missing.size() - done);
    if (done > 0) spdlog::info("vector backfill: embedded {} memories", done);
  }
}

}  // namespace engram
