#include "core/leaderboard_janitor.h"

#include <spdlog/spdlog.h>

#include <algorithm>

#include "common/thread_util.h"
#include "common/time_util.h"

namespace engram {

namespace {

std::chrono::milliseconds DeriveInterval(const LeaderboardJanitorOptions& o) {
  if (o.interval.count() > 0) return o.interval;
  std::chrono::microseconds shortest = std::chrono::hours(1) * 4;
  for (auto period : {o.retention, o.idempotency_ttl}) {
    if (period.count() > 0) shortest = std::min(shortest, period);
  }
  auto quarter = std::chrono::duration_cast<std::chrono::milliseconds>(shortest / 4);
  return std::clamp<std::chrono::milliseconds>(quarter, std::chrono::seconds(1),
                                               std::chrono::hours(1));
}

}  // namespace

LeaderboardJanitor::LeaderboardJanitor(LeaderboardService* service,
                                       LeaderboardJanitorOptions options)
    : service_(service),
      options_(std::move(options)),
      interval_(DeriveInterval(options_)),
      clock_(options_.clock != nullptr ? options_.clock : RealClock()) {}

LeaderboardJanitor::~LeaderboardJanitor() { Stop(); }

void LeaderboardJanitor::Start() {
  if (options_.retention.count() <= 0 && options_.idempotency_ttl.count() <= 0) return;
  if (thread_.joinable()) return;
  thread_ = std::thread([this] {
    NameThisThread("lb-janitor");
    Loop();
  });
}

void LeaderboardJanitor::Stop() {
  {
    MutexLock lock(&mu_);
    stopping_ = true;
  }
  cv_.SignalAll();
  if (thread_.joinable()) thread_.join();
}

void LeaderboardJanitor::Loop() {
  MutexLock lock(&mu_);
  while (!stopping_) {
    lock.Unlock();
    SweepOnce();
    lock.Lock();
    // Until the interval passes or Stop.
    const auto deadline = clock_->SteadyNow() + interval_;
    while (!stopping_ && clock_->SteadyNow() < deadline) clock_->WaitUntil(&cv_, &mu_, deadline);
  }
}

void LeaderboardJanitor::SweepOnce() {
  const int64_t now = clock_->WallMicros();
  if (options_.idempotency_ttl.count() > 0) {
    const int64_t before_s = (now - options_.idempotency_ttl.count()) / 1000000;
    auto expired = service_->ExpireIdempotency(before_s);
    if (expired.ok()) {
      expired_idempotency_.fetch_add(*expired);
      if (*expired > 0) spdlog::info("expired {} leaderboard idempotency records", *expired);
    } else {
      sweep_failures_.fetch_add(1);
      spdlog::warn("leaderboard idempotency expiry failed: {}", expired.status().ToString());
    }
  }
  if (options_.retention.count() > 0) {
    auto purged =
        service_->PurgeIdleUsers(now - options_.retention.count(), options_.max_users_per_sweep);
    // Counted also when a later user failed: what was deleted is gone.
    purged_users_.fetch_add(purged.users);
    purged_messages_.fetch_add(purged.deleted.messages);
    purged_images_.fetch_add(purged.deleted.images);
    if (purged.users > 0) {
      spdlog::info("retention: deleted {} idle leaderboard users ({} messages, {} images)",
                   purged.users, purged.deleted.messages, purged.deleted.images);
    }
    if (!purged.status.ok()) {
      sweep_failures_.fetch_add(1);
      spdlog::warn("leaderboard retention sweep failed: {}", purged.status.ToString());
    }
  }
}

}  // namespace engram
