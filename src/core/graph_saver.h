// GraphSaver: writes the vector graphs of shards a ShardCache dropped, on a thread of its own. A
// budget's eviction runs on the thread whose use went over the limit, under the budget's
// enforcement lock that every shard load in every domain waits on; saving a million-vector graph
// takes over a second, which neither that request nor those loads should wait for.
//
// A job holds its shard, so a dropped shard's memory is freed only once its graph is written: at
// most `capacity` jobs wait or run, and Enqueue blocks while that many do (the eviction then
// waits, as it would have without the saver). Saves run one at a time, also those a caller runs
// through Save (the shutdown's), so two shards of one key (an evicted one still waiting, its
// successor resident) never write the same file at once. A deleted scope's waiting job needs no
// cancelling: its cache discards the shard's graph, which makes the shard's save a no-op.
//
// Thread-safety: safe for concurrent use. Owns its thread and its jobs; the destructor runs the
// jobs still waiting and joins the thread. A job's functions must not call back into the saver.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <thread>

#include "common/mutex.h"
#include "common/status.h"

namespace engram {

// Writes one dropped shard's graph; it holds the shard.
using GraphSaveJob = std::function<Status()>;

struct GraphSaverOptions {
  size_t capacity = 2;  // jobs waiting or running at once (>= 1)
};

class GraphSaver {
 public:
  explicit GraphSaver(GraphSaverOptions options);
  ~GraphSaver();
  GraphSaver(const GraphSaver&) = delete;
  GraphSaver& operator=(const GraphSaver&) = delete;

  // Queues a job; waits while `capacity` jobs wait or run. Call with no cache lock held.
  void Enqueue(GraphSaveJob job) EXCLUDES(mu_);
  // Runs `save` on the calling thread, one at a time with the saver's own jobs.
  Status Save(const GraphSaveJob& save) EXCLUDES(save_mu_);
  // Returns once no job waits or runs.
  void Flush() EXCLUDES(mu_);

  // Jobs whose save failed, since start (each one is also logged).
  int64_t failures() const { return failures_.load(); }

 private:
  void Run() EXCLUDES(mu_, save_mu_);

  const GraphSaverOptions options_;
  // Held for every save, the thread's and Save's; never taken under mu_.
  Mutex save_mu_;
  Mutex mu_;
  CondVar changed_;  // a job queued or finished, or stopping
  std::deque<GraphSaveJob> queue_ GUARDED_BY(mu_);
  bool running_ GUARDED_BY(mu_) = false;  // the thread is saving a job it took
  bool stopping_ GUARDED_BY(mu_) = false;
  std::atomic<int64_t> failures_{0};
  std::thread thread_;
};

}  // namespace engram
