#include "embed/batching_embedder.h"

#include <algorithm>
#include <vector>

namespace engram {

BatchingEmbedder::BatchingEmbedder(const Embedder* inner, BatchingEmbedderOptions options)
    : inner_(inner), options_(options) {
  options_.max_leaders = std::max(options_.max_leaders, 1);
}

Result<std::vector<std::vector<float>>> BatchingEmbedder::EmbedBatch(
    const std::vector<std::string>& texts) const {
  // Large requests gain nothing from merging: run them directly.
  if (texts.size() >= options_.max_batch_texts) return inner_->EmbedBatch(texts);
  Request self{&texts};
  std::unique_lock<std::mutex> lock(mu_);
  queue_.push_back(&self);
  for (;;) {
    if (self.done) return std::move(self.result);
    // Every leader busy, or ours is already in a running batch (nothing left to lead): wait.
    if (leaders_active_ >= options_.max_leaders || queue_.empty()) {
      cv_.wait(lock);
      continue;
    }
    // Lead one batch: the oldest queued requests, up to max_batch_texts texts. If ours is not
    // among them, the loop comes back here and we lead (or wait for) a later batch.
    ++leaders_active_;
    std::vector<Request*> batch;
    std::vector<std::string> all;
    while (!queue_.empty() &&
           (batch.empty() || all.size() + queue_.front()->texts->size() <= options_.max_batch_texts)) {
      Request* r = queue_.front();
      queue_.pop_front();
      batch.push_back(r);
      all.insert(all.end(), r->texts->begin(), r->texts->end());
    }
    lock.unlock();
    auto vectors = inner_->EmbedBatch(all);
    lock.lock();
    size_t at = 0;
    for (Request* r : batch) {
      if (vectors.ok()) {
        std::vector<std::vector<float>> mine;
        mine.reserve(r->texts->size());
        for (size_t i = 0; i < r->texts->size(); ++i) mine.push_back(std::move((*vectors)[at + i]));
        r->result = std::move(mine);
      } else {
        r->result = vectors.status();
      }
      at += r->texts->size();
      r->done = true;
    }
    --leaders_active_;
    cv_.notify_all();
  }
}

}  // namespace engram
