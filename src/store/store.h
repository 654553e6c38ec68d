// The Store: the system of record. Everything held in memory (index shards) can be rebuilt from
// it. It joins the per-domain contracts (message_store.h, agent_memory_store.h, skill_store.h,
// kb_store.h, with memory_vectors.h and scope_sync.h shared by them; transfer_store.h for export
// and import; workspace_census.h for the workspace overview) for the backends that implement them
// all (SqliteStore, PgStore); services depend only on the contract they use.
//
// Thread-safety: implementations are safe for concurrent use from any number of threads.
// Durability: a write call returns OK only after its data is durable on disk (fsync).
#pragma once

#include "store/agent_memory_store.h"
#include "store/kb_store.h"
#include "store/message_store.h"
#include "store/skill_store.h"
#include "store/store_stats.h"
#include "store/transfer_store.h"
#include "store/workspace_census.h"

namespace engram {

class Store : public MessageStore,
              public AgentMemoryStore,
              public SkillStore,
              public KbStore,
              public TransferStore,
              public WorkspaceCensus {
 public:
  ~Store() override = default;

  using Stats = StoreStats;
  virtual Stats GetStats() = 0;
};

}  // namespace engram
