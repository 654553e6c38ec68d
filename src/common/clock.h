// Clock: where a component reads time and waits for it, so that tests can move time instead of
// sleeping through it.
//
// A component that reads time takes a `Clock*` in its options (null: RealClock()). It reads
// monotonic time for deadlines, backoffs and pauses (SteadyNow), waits for such a deadline
// through the clock (WaitUntil), so that under a FakeClock the wait ends when a test advances
// time past it, not when real time gets there, and reads the calendar for what it stamps on rows
// and compares with them (WallMicros: creation and update times, expiry, retention).
//
// Thread-safety: every method may be called from any thread. RealClock() is stateless and lives
// for the whole process; a FakeClock must outlive the components given it.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>

#include "common/mutex.h"
#include "common/time_util.h"

namespace engram {

class Clock {
 public:
  using SteadyTime = std::chrono::steady_clock::time_point;

  virtual ~Clock() = default;

  // Monotonic time: deadlines, backoffs, pauses, durations.
  virtual SteadyTime SteadyNow() const = 0;

  // Calendar time, microseconds since the Unix epoch: row stamps, expiry, retention.
  virtual int64_t WallMicros() const = 0;

  // Waits on `cv` until it is signalled or this clock reaches `deadline`. May return early
  // (spuriously): callers wait in a loop over their condition and the deadline.
  virtual void WaitUntil(CondVar* cv, Mutex* mu, SteadyTime deadline) const REQUIRES(mu) = 0;
};

// The system's steady clock and condition-variable deadlines.
class SystemClock final : public Clock {
 public:
  SteadyTime SteadyNow() const override { return std::chrono::steady_clock::now(); }
  int64_t WallMicros() const override { return NowMicros(); }
  void WaitUntil(CondVar* cv, Mutex* mu, SteadyTime deadline) const override REQUIRES(mu) {
    cv->WaitUntil(mu, deadline);
  }
};

// The clock of the running process: a stateless SystemClock, so sharing it shares nothing.
inline const Clock* RealClock() {
  static const SystemClock clock;
  return &clock;
}

// Time that moves only when a test advances it. Steady time starts at an arbitrary point far from
// zero, so that arithmetic below "now" stays valid; the calendar starts at 2026-01-01T00:00:00Z.
// Advance moves both.
class FakeClock final : public Clock {
 public:
  SteadyTime SteadyNow() const override {
    return SteadyTime(std::chrono::nanoseconds(now_ns_.load()));
  }

  // A waiter whose deadline has not come waits one real millisecond at a time (it cannot be
  // told which condition variable to signal when time moves), then returns for its caller to
  // look again: in tests that is a few polls, never a sleep through the backoff itself.
  void WaitUntil(CondVar* cv, Mutex* mu, SteadyTime deadline) const override REQUIRES(mu) {
    if (SteadyNow() >= deadline) return;
    waits_.fetch_add(1);
    cv->WaitFor(mu, std::chrono::milliseconds(1));
  }

  int64_t WallMicros() const override { return wall_us_.load(); }

  void Advance(std::chrono::nanoseconds by) {
    now_ns_.fetch_add(by.count());
    wall_us_.fetch_add(std::chrono::duration_cast<std::chrono::microseconds>(by).count());
  }

  // Waits for a deadline still ahead so far: a test that sees it grow knows a component looked at
  // its state and found nothing due (a negative it could otherwise only sleep on).
  uint64_t waits() const { return waits_.load(); }

 private:
  mutable std::atomic<uint64_t> waits_{0};
  std::atomic<int64_t> now_ns_{std::chrono::nanoseconds(std::chrono::hours(24 * 365)).count()};
  std::atomic<int64_t> wall_us_{int64_t{1767225600} * 1000 * 1000};
};

}  // namespace engram
