// WorkspaceCensus: what each workspace holds, counted by the store, for the workspace overview
// (GET /workspaces and the console). Counts are of stored rows at the time of the call: an agent
// memory past its expiry is counted until the sweep removes it.
//
// Thread-safety: implementations are safe for concurrent use from any number of threads.
// Cost: one pass over each table's workspace index (no row is read), so it is meant for an
// operator's page, not for a per-request path.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/status.h"

namespace engram {

struct WorkspaceCounts {
  std::string workspace;
  int64_t memories = 0;                  // agent memories (V4, mem0)
  int64_t memory_users = 0;              // distinct non-empty user_id among them
  int64_t memory_events = 0;             // V4 add events, kept with their results
  int64_t memory_events_unfinished = 0;  // pending or running
  int64_t skills = 0;
  int64_t skill_owners = 0;  // distinct users with skills
  int64_t skill_tasks = 0;
  int64_t skill_tasks_unfinished = 0;  // pending or running
  int64_t knowledge_bases = 0;         // with at least one document
  int64_t documents = 0;
  int64_t documents_processing = 0;
  int64_t leaderboard_users = 0;  // Leaderboard scopes (one per user_id)
  int64_t leaderboard_messages = 0;
};

class WorkspaceCensus {
 public:
  virtual ~WorkspaceCensus() = default;
  // Every workspace that holds anything, sorted bytewise by name.
  virtual Result<std::vector<WorkspaceCounts>> CountWorkspaces() = 0;
};

}  // namespace engram
