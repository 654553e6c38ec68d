// VectorBackfill: computes memory vectors in the background, off the write path.
//
// Two kinds of work:
//  - fresh writes: an add commits its text (durable, BM25-searchable at once) and queues its
//    memories here; the shard counts them as pending, and a search on that shard waits (bounded)
//    for them, so a search right after an add still sees the new memories in vector recall.
//  - backfill: memories stored before an embedder was configured or under another model, found
//    when a shard loads. Searches do not wait for these; BM25 covers them meanwhile.
// Vectors are persisted (MemoryVectors::PutVectors) before they are handed to the shard; after a
// crash the shard load finds memories without vectors and backfills them.
//
// One model pass serves many adds: a worker takes the queued memories of several adds, of any
// scopes, up to batch_size texts and max_batch_bytes of text, embeds them in one EmbedBatch and
// hands each shard only its own vectors. Adds of one or two messages (mem0-style clients) would
// otherwise run the model on one or two texts per pass, paying its fixed cost per pass each time.
// An idle queue adds no delay: a worker never waits for more work to arrive, so a lone add is a
// pass of its own and merging happens only when adds queue up behind busy workers. A pass holds
// fresh work or backfill work, never both: a search may be waiting for the fresh vectors, and
// backfill texts would lengthen its wait.
//
// Thread-safety: Enqueue* are safe from any thread. Owns `threads` worker threads; the destructor
// stops them after their batch in progress.
#pragma once

#include <chrono>
#include <deque>
#include <memory>
#include <thread>
#include <vector>

#include "common/mutex.h"
#include "core/scope_shard.h"
#include "embed/embedder.h"
#include "store/memory_vectors.h"

namespace engram {

struct VectorBackfillOptions {
  size_t batch_size = 32;  // texts per model pass (EmbedBatch call), from one add or several
  // Text bytes per pass: a pass stops taking texts beyond it (it always takes one), so a pass of
  // long texts stays short and the fresh vectors it carries are not held back for long.
  size_t max_batch_bytes = 32 << 10;
  int threads = 2;
  // Fresh memories, and bytes of their text, allowed to wait for a vector. An add that would go
  // beyond either waits up to admission_wait for room (AdmitFresh), and is refused after that: a
  // sustained write load cannot grow the queue without limit, and no add is held long. Bytes
  // count because the model's cost grows with a text's length (a 20 KB source file is ~50 model
  // windows, a chat turn one).
  size_t max_pending_fresh = 1024;
  size_t max_pending_fresh_bytes = 4 << 20;
  std::chrono::milliseconds admission_wait{1000};
  int nice = 10;  // background work, as JobQueue's workers: requests get the CPU first
};

inline size_t TextBytes(const std::vector<std::pair<int64_t, std::string>>& items) {
  size_t n = 0;
  for (const auto& it : items) n += it.second.size();
  return n;
}

class VectorBackfill {
 public:
  VectorBackfill(MemoryVectors* store, const Embedder* embedder,
                 VectorBackfillOptions options = {});
  ~VectorBackfill();

  // Whether `count` fresh memories of `bytes` of text may be queued: true at once while the
  // pending fresh work is within max_pending_fresh and max_pending_fresh_bytes (or there is none),
  // else once it drains, waiting at most admission_wait; false when it did not drain in time. An
  // add asks before it writes, so a refused add stores nothing. On true the room is reserved (so
  // concurrent adds cannot all pass one check): EnqueueFresh takes the reservation over, and
  // ReleaseFresh gives it back when nothing is queued after all.
  bool AdmitFresh(size_t count, size_t bytes);
  void ReleaseFresh(size_t count, size_t bytes);
  // Fresh memories of `shard` (seq, text), admitted with a reservation of `reserved_count`
  // memories and `reserved_bytes`; the shard is told they are pending. Never blocks. Fresh work
  // runs before backfill work.
  void EnqueueFresh(std::shared_ptr<ScopeShard> shard,
                    std::vector<std::pair<int64_t, std::string>> items, size_t reserved_count,
                    size_t reserved_bytes);
  // Every memory of `shard` that lacks a vector of the current model.
  void EnqueueBackfill(std::shared_ptr<ScopeShard> shard);

  // Memories waiting for a vector, for metrics.
  size_t pending() const;

  // Stops taking work and waits up to `grace` for the workers. Embeddings in progress (a whole
  // pass, whichever scopes it serves) are discarded, never written, once this is called, so the
  // store may be closed right after it returns even when a worker is still inside the model (its
  // memories are re-embedded by the backfill at the next start). Returns false when a worker did
  // not finish in time: the caller must then not destroy this object (it would wait for that
  // worker) and should end the process.
  bool Shutdown(std::chrono::milliseconds grace);

 private:
  // Memories of one shard waiting for vectors (a whole add, or a part of one).
  struct Job {
    std::shared_ptr<ScopeShard> shard;
    std::vector<std::pair<int64_t, std::string>> items;
    bool fresh = false;
  };
  void Run();
  // Moves the texts of one model pass out of the queues into `pass` (parts of jobs of several
  // shards; see the class comment). Needs work queued.
  void TakePass(std::vector<Job>& pass) REQUIRES(mu_);
  // Whether `count` fresh memories of `bytes` of text fit the pending limits now (AdmitFresh).
  bool HasRoomLocked(size_t count, size_t bytes) const REQUIRES(mu_);
  // Embeds the pass in one EmbedBatch, stores the vectors and hands each shard its own.
  void Process(std::vector<Job>& pass);
  // Splits items into jobs of batch_size and queues them (pending counts are the caller's).
  void Queue(std::shared_ptr<ScopeShard> shard, std::vector<std::pair<int64_t, std::string>> items,
             bool fresh);

  MemoryVectors* store_;
  const Embedder* embedder_;
  VectorBackfillOptions options_;
  mutable Mutex mu_;
  CondVar cv_;
  CondVar room_cv_;  // signalled when fresh work completes
  std::deque<Job> fresh_ GUARDED_BY(mu_);
  std::deque<Job> backfill_ GUARDED_BY(mu_);
  size_t pending_ GUARDED_BY(mu_) = 0;  // all queued memories
  size_t pending_fresh_ GUARDED_BY(mu_) = 0;
  size_t pending_fresh_bytes_ GUARDED_BY(mu_) = 0;
  bool stopping_ GUARDED_BY(mu_) = false;
  size_t storing_ GUARDED_BY(mu_) = 0;  // workers inside a store call
  size_t running_ GUARDED_BY(mu_) = 0;  // workers not yet exited
  std::vector<std::thread> workers_;
};

}  // namespace engram
