// BodyBudget: the request body bytes held at once over all connections
// (HttpServerOptions::max_inflight_body_bytes). A connection reserves its body's bytes before
// reading them (a chunked body step by step) and releases them once its request is answered, so
// many slow or large uploads turn into fast 503s instead of memory growth.
// Thread-safety: every method may be called from any thread (lock-free).
#pragma once

#include <atomic>
#include <cstdint>

namespace engram {

class BodyBudget {
 public:
  explicit BodyBudget(uint64_t limit_bytes) : limit_(limit_bytes) {}

  // Takes `bytes` from the budget; false (and counted as a refusal) when it would overflow.
  bool Reserve(uint64_t bytes) {
    uint64_t used = used_.load(std::memory_order_relaxed);
    do {
      if (used + bytes > limit_) {
        refused_.fetch_add(1, std::memory_order_relaxed);
        return false;
      }
    } while (!used_.compare_exchange_weak(used, used + bytes, std::memory_order_relaxed));
    return true;
  }
  void Release(uint64_t bytes) { used_.fetch_sub(bytes, std::memory_order_relaxed); }

  uint64_t used() const { return used_.load(std::memory_order_relaxed); }
  uint64_t refused() const { return refused_.load(std::memory_order_relaxed); }

 private:
  const uint64_t limit_;
  std::atomic<uint64_t> used_{0};
  std::atomic<uint64_t> refused_{0};
};

}  // namespace engram
