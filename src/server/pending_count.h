// PendingCount: how many started things have not ended yet, and a wait for none. The transport
// counts its deferred answers with it (started by a handler, replied to later from another
// thread), so a graceful stop waits for every one of them.
// Thread-safety: every method may be called from any thread.
#pragma once

#include <condition_variable>
#include <mutex>

namespace engram {

class PendingCount {
 public:
  void Begin() {
    std::lock_guard<std::mutex> lock(mu_);
    ++pending_;
  }
  void End() {
    // Notified under the lock: once a waiter sees zero it may return and destroy this object.
    std::lock_guard<std::mutex> lock(mu_);
    --pending_;
    cv_.notify_all();
  }
  void WaitForNone() {
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait(lock, [this] { return pending_ == 0; });
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  int pending_ = 0;  // guarded by mu_
};

}  // namespace engram
