// PendingCount: how many started things have not ended yet, and a wait for none. The transport
// counts its deferred answers with it (started by a handler, replied to later from another
// thread), so a graceful stop waits for every one of them.
// Thread-safety: every method may be called from any thread.
#pragma once

#include "common/mutex.h"

namespace engram {

class PendingCount {
 public:
  void Begin() EXCLUDES(mu_) {
    MutexLock lock(&mu_);
    ++pending_;
  }
  void End() EXCLUDES(mu_) {
    // Notified under the lock: once a waiter sees zero it may return and destroy this object.
    MutexLock lock(&mu_);
    --pending_;
    cv_.SignalAll();
  }
  void WaitForNone() EXCLUDES(mu_) {
    MutexLock lock(&mu_);
    while (pending_ != 0) cv_.Wait(&mu_);
  }

 private:
  Mutex mu_;
  CondVar cv_;
  int pending_ GUARDED_BY(mu_) = 0;
};

}  // namespace engram
