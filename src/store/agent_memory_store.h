// AgentMemoryStore: the agent memories of the memory API V4 (one scope per workspace), their
// history, the memory events that change them (asynchronous adds, resumed after a restart) and
// users' feedback on them.
//
// Thread-safety: implementations are safe for concurrent use from any number of threads.
// Durability: a write call returns OK only after its data is durable on disk (fsync).
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string_view>
#include <vector>

#include "common/status.h"
#include "store/memory_vectors.h"
#include "store/types.h"

namespace engram {

class AgentMemoryStore : public virtual MemoryVectors {
 public:
  // Every agent memory of a workspace (expired ones included), in write order.
  virtual Result<std::vector<MemoryRecord>> LoadAgentMemories(std::string_view workspace) = 0;

  // Agent memories of a workspace inserted or changed after version `since`, and the ids deleted
  // after it.
  virtual Result<ScopeDelta> LoadAgentMemoriesSince(std::string_view workspace, int64_t since) {
    (void)workspace, (void)since;
    return Status::Internal("LoadAgentMemoriesSince: this store is not shared");
  }

  // Inserts, updates and deletes agent memories atomically and durably, with a history row per
  // change and, when asked, the end state of their event.
  virtual Result<MemoryChangeOutcome> ApplyMemoryChanges(MemoryChangeBatch batch) = 0;

  // A memory's history, oldest first (empty for an unknown id).
  virtual Result<std::vector<HistoryRecord>> GetHistory(std::string_view workspace,
                                                        std::string_view memory_id) = 0;
  // The ADD and UPDATE rows of the history of every memory of a workspace that an update replaced
  // at least once (deleted ones included), oldest first: the versions a shard's load keeps.
  virtual Result<std::vector<HistoryRecord>> LoadReplacedHistory(std::string_view workspace) = 0;

  // Stores a new (kPending) event durably.
  virtual Status InsertEvent(const MemoryEventRecord& event) = 0;
  // As InsertEvent, answering through `done` (called once, from any thread, and must not block)
  // when the event is durable; GetEvent finds it from then on. A store with a faster way to make
  // it durable than its own transaction (SQLite's intake journal) overrides it.
  virtual void AcceptEvent(MemoryEventRecord event, std::function<void(Status)> done) {
    done(InsertEvent(event));
  }
  // Sets an event's status (and error message), e.g. kRunning or kFailed.
  virtual Status UpdateEventStatus(std::string_view id, JobStatus status,
                                   std::string_view error_message) = 0;
  // kNotFound when the workspace has no such event.
  virtual Result<MemoryEventRecord> GetEvent(std::string_view workspace, std::string_view id) = 0;
  // Events still pending or running (a restart resumes them), oldest first.
  virtual Result<std::vector<MemoryEventRecord>> UnfinishedEvents() = 0;
  // A workspace's events (accepted ones included), newest first (created_at, then id descending):
  // [offset, offset + limit) of them; `total` gets their count.
  virtual Result<std::vector<MemoryEventRecord>> ListEvents(std::string_view workspace,
                                                            size_t offset, size_t limit,
                                                            size_t* total) = 0;
  // Stores a user's feedback on an agent memory durably (the caller checked the memory exists).
  virtual Status InsertFeedback(std::string_view workspace,
                                const MemoryFeedbackRecord& feedback) = 0;
  // The feedback given on one memory, oldest first (empty for an unknown id).
  virtual Result<std::vector<MemoryFeedbackRecord>> GetFeedback(std::string_view workspace,
                                                                std::string_view memory_id) = 0;
};

}  // namespace engram
