// LeaderboardJanitor: the background half of the leaderboard's data lifecycle
// (docs/leaderboard.md).
//   * retention: users whose latest write is older than `retention` are deleted as
//     LeaderboardService::DeleteUser does (messages, images no other message shows, vectors, the
//     shard, idempotency records); off unless set;
//   * idempotency expiry: records of request_ids older than `idempotency_ttl` are deleted. A retry
//     after that stores its messages again, so the TTL must outlast every client's retry window
//     (the leaderboard platform retries an add for minutes; the default is 7 days).
// One thread sweeps every `interval`; a failed sweep is logged (ids and counts only) and retried
// at the next one.
//
// Thread-safety: the counters may be read from any thread; Start, Stop and the destructor are for
// the owner. Does not own the service.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <thread>

#include "common/clock.h"
#include "common/mutex.h"
#include "core/leaderboard_service.h"

namespace engram {

struct LeaderboardJanitorOptions {
  // Users idle longer than this are deleted; zero (the default) keeps data until it is deleted.
  std::chrono::microseconds retention{0};
  // Idempotency records older than this are deleted; zero keeps them forever.
  std::chrono::microseconds idempotency_ttl{std::chrono::hours(24 * 7)};
  // Time between sweeps; zero: a quarter of the shorter of the two periods above, between one
  // second and one hour (so a test with a retention of seconds sees it applied within seconds).
  std::chrono::milliseconds interval{0};
  // Users deleted per sweep at most; the rest wait for the next sweep.
  size_t max_users_per_sweep = 1000;
  // What "idle" and "older" are measured against, and the pause between sweeps; null: RealClock().
  // Not owned; it must outlive the janitor.
  const Clock* clock = nullptr;
};

class LeaderboardJanitor {
 public:
  LeaderboardJanitor(LeaderboardService* service, LeaderboardJanitorOptions options);
  ~LeaderboardJanitor();  // Stop()
  LeaderboardJanitor(const LeaderboardJanitor&) = delete;
  LeaderboardJanitor& operator=(const LeaderboardJanitor&) = delete;

  // Starts the sweeping thread; does nothing when both retention and TTL are off.
  void Start();
  // Stops the thread after its sweep in progress (idempotent).
  void Stop();
  // One sweep, on the calling thread (the thread runs these; tests call it directly).
  void SweepOnce();

  // The interval the thread sweeps at (after deriving it from the periods).
  std::chrono::milliseconds interval() const { return interval_; }

  // What the sweeps deleted, for /metrics.
  int64_t purged_users() const { return purged_users_.load(); }
  int64_t purged_messages() const { return purged_messages_.load(); }
  int64_t purged_images() const { return purged_images_.load(); }
  int64_t expired_idempotency() const { return expired_idempotency_.load(); }
  int64_t sweep_failures() const { return sweep_failures_.load(); }

 private:
  void Loop();

  LeaderboardService* service_;
  LeaderboardJanitorOptions options_;
  std::chrono::milliseconds interval_;
  const Clock* const clock_;  // options_.clock, or RealClock()

  Mutex mu_;
  CondVar cv_;
  bool stopping_ GUARDED_BY(mu_) = false;
  std::thread thread_;

  std::atomic<int64_t> purged_users_{0};
  std::atomic<int64_t> purged_messages_{0};
  std::atomic<int64_t> purged_images_{0};
  std::atomic<int64_t> expired_idempotency_{0};
  std::atomic<int64_t> sweep_failures_{0};
};

}  // namespace engram
