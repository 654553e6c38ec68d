// TransferStore: what `engram export` and `engram import` need beyond the domain contracts: the
// scopes a store holds, and writing an agent memory or a skill as it was exported (its ids, times
// and vector, with its history, feedback or former versions) instead of as a new change.
//
// Thread-safety: implementations are safe for concurrent use from any number of threads.
// Durability: a write call returns OK only after its data is durable on disk (fsync). On a shared
// store an import moves the scope's version, so running nodes pick it up as any other write.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "common/status.h"
#include "store/scope_sync.h"
#include "store/skill_types.h"
#include "store/types.h"

namespace engram {

// Every scope that holds data, each list sorted.
struct StoredScopes {
  std::vector<std::pair<std::string, std::string>> leaderboard_users;  // workspace, user_id
  std::vector<std::string> memory_workspaces;                          // with agent memories
  std::vector<std::string> skill_workspaces;                           // with skills
  std::vector<std::pair<std::string, std::string>> knowledge_bases;    // workspace, kb_id
};

// One agent memory as exported: the record (workspace, id, times, vector) and what belongs to it.
struct AgentMemoryImport {
  MemoryRecord memory;
  std::vector<HistoryRecord> history;  // oldest first; seq is assigned anew
  std::vector<MemoryFeedbackRecord> feedback;
};

class TransferStore : public virtual ScopeSync {
 public:
  virtual Result<StoredScopes> ListStoredScopes() = 0;

  // Writes one agent memory with its history and feedback, atomically and durably. false, writing
  // nothing, when the workspace already has an agent memory of that id (an import run again);
  // kConflict when the id belongs to another workspace's memory or to a Leaderboard message.
  virtual Result<bool> ImportAgentMemory(const AgentMemoryImport& item) = 0;

  // Writes one skill (files and vector included) with its former versions, oldest first,
  // atomically and durably. false, writing nothing, when the workspace already has the skill's
  // id; kConflict when its owner has another skill of that name or the id is another workspace's.
  virtual Result<bool> ImportSkill(const SkillRecord& skill,
                                   const std::vector<SkillVersionRecord>& versions) = 0;
};

}  // namespace engram
