// VectorBackfill: computes missing vectors in the background — for memories stored before an
// embedder was configured or under another model. It embeds in batches, persists the vectors, and
// hands them to the shard; searches keep working meanwhile (BM25 covers what has no vector yet).
//
// Thread-safety: Enqueue is safe from any thread. Owns one worker thread; the destructor stops it
// after the batch in progress.
#pragma once

#include <condition_variable>
#include <deque>
#include <memory>
#include <mutex>
#include <thread>

#include "core/scope_shard.h"
#include "embed/embedder.h"
#include "store/store.h"

namespace engram {

class VectorBackfill {
 public:
  VectorBackfill(Store* store, const Embedder* embedder, size_t batch_size = 32);
  ~VectorBackfill();

  void Enqueue(std::shared_ptr<ScopeShard> shard);

  // Documents still waiting, for metrics.
  size_t pending() const;

 private:
  void Run();

  Store* store_;
  const Embedder* embedder_;
  size_t batch_size_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::shared_ptr<ScopeShard>> queue_;  // guarded by mu_
  size_t pending_docs_ = 0;                        // guarded by mu_
  bool stopping_ = false;                          // guarded by mu_
  std::thread worker_;
};

}  // namespace engram
