// ScopeSync: the capability of a store that several nodes share (PostgreSQL; see
// docs/scale-out.md). Every domain contract of the store derives from it, so a service holding
// one slice can keep its in-memory shards in step with writes made by other nodes. A store that
// is not shared keeps the defaults below. On a shared store the Unfinished*() calls of the job
// domains (memory events, skill tasks, knowledge-base documents), polled periodically, also hand
// this node the jobs of nodes whose lease ran out.
//
// Thread-safety: implementations are safe for concurrent use from any number of threads.
// Durability: ScopeSync writes nothing itself; a scope's version counts committed writes only, and
// every domain's write calls return OK only after their data is durable on disk (fsync).
#pragma once

#include <cstdint>
#include <functional>
#include <string>

#include "common/status.h"
#include "store/types.h"  // ScopeKey*(): the keys of ScopeVersion and change notifications

namespace engram {

class ScopeSync {
 public:
  virtual ~ScopeSync() = default;

  // True when other processes write to this store too. Then the in-memory shards are caches that
  // check their scope's version before answering, and the Unfinished*() calls, polled
  // periodically, also hand this node the jobs of nodes whose lease ran out.
  virtual bool shared() const { return false; }
  // The change counter of a scope (keys from ScopeKey*() in types.h): every committed write that
  // touches the scope increases it. A store that is not shared answers 0.
  virtual Result<int64_t> ScopeVersion(const std::string& scope_key) {
    (void)scope_key;
    return int64_t{0};
  }
  // Shared stores call `fn` with a scope key (on a thread of the store) soon after another write
  // to that scope commits, on any node: a hint to refresh caches early. Readers must still check
  // ScopeVersion: a notification can be lost (e.g. while the store reconnects). Returns an id
  // for RemoveChangeListener, which waits for a call in progress; `fn` must not add or remove
  // listeners. A store that is not shared never calls it.
  virtual int AddChangeListener(std::function<void(const std::string& scope_key)> fn) {
    (void)fn;
    return 0;
  }
  virtual void RemoveChangeListener(int id) { (void)id; }
};

}  // namespace engram
