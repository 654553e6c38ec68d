// MemoryVectors: the vectors of stored memories, of either memory API (Leaderboard messages and
// V4 agent memories). Written by the vector backfill (vectors computed off the write path) and by
// memory events.
//
// Thread-safety: implementations are safe for concurrent use from any number of threads.
// Durability: a write call returns OK only after its data is durable on disk (fsync).
#pragma once

#include <vector>

#include "common/status.h"
#include "store/scope_sync.h"
#include "store/types.h"

namespace engram {

class MemoryVectors : public virtual ScopeSync {
 public:
  // Stores vectors for existing memories (replacing older ones). Memories deleted meanwhile are
  // skipped.
  virtual Status PutVectors(const std::vector<VectorUpdate>& updates) = 0;
};

}  // namespace engram
