#include "embed/batching_embedder.h"

#include <algorithm>
#include <vector>

#include "common/thread_util.h"

namespace engram {

BatchingEmbedder::BatchingEmbedder(const Embedder* inner, BatchingEmbedderOptions options)
    : inner_(inner), options_(options) {
  requests_.max_leaders = std::max(options_.max_leaders, 1);
  background_.max_leaders = std::max(options_.max_background_leaders, 1);
}

Result<std::vector<std::vector<float>>> BatchingEmbedder::EmbedBatch(
    const std::vector<std::string>& texts) const {
  Request self{&texts};
  MutexLock lock(&mu_);
  Lane& lane = ThisThreadIsBackground() ? background_ : requests_;
  lane.queue.push_back(&self);
  for (;;) {
    if (self.done) return std::move(self.result);
    // Every leader of the lane busy, or ours is already in a running batch (nothing left to
    // lead): wait.
    if (lane.leaders_active >= lane.max_leaders || lane.queue.empty()) {
      cv_.Wait(&mu_);
      continue;
    }
    // Lead one batch: the oldest queued requests of the lane, up to max_batch_texts texts (a
    // larger request is a batch of its own). If ours is not among them, the loop comes back
    // here and we lead (or wait for) a later batch.
    ++lane.leaders_active;
    std::vector<Request*> batch;
    std::vector<std::string> all;
    while (!lane.queue.empty() &&
           (batch.empty() ||
            all.size() + lane.queue.front()->texts->size() <= options_.max_batch_texts)) {
      Request* r = lane.queue.front();
      lane.queue.pop_front();
      batch.push_back(r);
      all.insert(all.end(), r->texts->begin(), r->texts->end());
    }
    lock.Unlock();
    auto vectors = inner_->EmbedBatch(all);
    lock.Lock();
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
    --lane.leaders_active;
    cv_.SignalAll();
  }
}

}  // namespace engram
