// The Store interface: the system of record. Everything held in memory (index shards) can be
// rebuilt from it.
//
// Thread-safety: implementations are safe for concurrent use from any number of threads.
// Durability: a write call returns OK only after its data is durable on disk (fsync).
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"
#include "store/intake_journal.h"
#include "store/kb_types.h"
#include "store/skill_types.h"
#include "store/types.h"

namespace engram {

class Store {
 public:
  virtual ~Store() = default;

  // Stores a batch atomically and durably. With an idempotency record whose key already exists,
  // writes nothing and reports the existing record.
  virtual Result<AddOutcome> Add(AddBatch batch) = 0;

  // Every leaderboard message of one scope (workspace + user_id), in write order.
  virtual Result<std::vector<MemoryRecord>> LoadScope(std::string_view workspace,
                                                      std::string_view user_id) = 0;

  // Stores vectors for existing memories (replacing older ones). Memories deleted meanwhile are
  // skipped.
  virtual Status PutVectors(const std::vector<VectorUpdate>& updates) = 0;

  // --- Agent memories (memory API V4) ---

  // Every agent memory of a workspace (expired ones included), in write order.
  virtual Result<std::vector<MemoryRecord>> LoadAgentMemories(std::string_view workspace) = 0;

  // Inserts, updates and deletes agent memories atomically and durably, with a history row per
  // change and, when asked, the end state of their event.
  virtual Result<MemoryChangeOutcome> ApplyMemoryChanges(MemoryChangeBatch batch) = 0;

  // A memory's history, oldest first (empty for an unknown id).
  virtual Result<std::vector<HistoryRecord>> GetHistory(std::string_view workspace,
                                                        std::string_view memory_id) = 0;

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

  // --- Skills ---
  // Every skill of a workspace, files included, in no particular order.
  virtual Result<std::vector<SkillRecord>> LoadSkills(std::string_view workspace) = 0;
  // kNotFound when the workspace has no such skill.
  virtual Result<SkillRecord> GetSkill(std::string_view workspace, std::string_view id) = 0;
  // Former versions of a skill, oldest first.
  virtual Result<std::vector<SkillVersionRecord>> GetSkillVersions(std::string_view workspace,
                                                                   std::string_view id) = 0;
  // Inserts, updates (recording the previous state as a version) and deletes skills atomically
  // and durably, with the end state of their task when asked. kConflict when an insert or update
  // would give an owner two skills of one name; kNotFound when an updated or deleted skill is gone.
  virtual Status ApplySkillChanges(SkillChangeBatch batch) = 0;
  virtual Status InsertSkillTask(const SkillTaskRecord& task) = 0;
  // kNotFound when the workspace has no such task.
  virtual Result<SkillTaskRecord> GetSkillTask(std::string_view workspace, std::string_view id) = 0;
  // Tasks still pending or running (a restart resumes them), oldest first.
  virtual Result<std::vector<SkillTaskRecord>> UnfinishedSkillTasks() = 0;
  // --- end Skills ---

  // --- Knowledge bases --- (sqlite_kb.cc)
  // Stores a document as PROCESSING, replacing the one with its id and deleting that one's chunks.
  virtual Status PutKbDoc(const KbDocRecord& doc) = 0;
  // Ends an ingestion job: doc.status kSucceeded (with content and chunks) or kFailed
  // (error_message). Writes nothing and returns false when the document was deleted or uploaded
  // again since (its job_id differs).
  virtual Result<bool> FinishKbDoc(const KbDocRecord& doc,
                                   const std::vector<KbChunkRecord>& chunks) = 0;
  // kNotFound when the knowledge base has no such document.
  virtual Result<KbDocRecord> GetKbDoc(std::string_view workspace, std::string_view kb_id,
                                       std::string_view id) = 0;
  // Newest first, without content; `total` gets the document count.
  virtual Result<std::vector<KbDocRecord>> ListKbDocs(std::string_view workspace,
                                                      std::string_view kb_id, size_t offset,
                                                      size_t limit, size_t* total) = 0;
  // Deletes a document and its chunks; false when there was none.
  virtual Result<bool> DeleteKbDoc(std::string_view workspace, std::string_view kb_id,
                                   std::string_view id) = 0;
  // Every chunk of a knowledge base, by document and position.
  virtual Result<std::vector<KbChunkRecord>> LoadKbChunks(std::string_view workspace,
                                                          std::string_view kb_id) = 0;
  // Documents still PROCESSING (a restart resumes them), oldest first.
  virtual Result<std::vector<KbDocRecord>> UnfinishedKbDocs() = 0;
  // --- end Knowledge bases ---

  // --- Several nodes on one store (PostgreSQL; see docs/scale-out.md) ---
  // True when other processes write to this store too. Then the in-memory shards are caches that
  // check their scope's version before answering, and the Unfinished*() calls above, polled
  // periodically, also hand this node the jobs of nodes whose lease ran out.
  virtual bool shared() const { return false; }
  // The change counter of a scope (keys from ScopeKey*() in types.h): every committed write that
  // touches the scope increases it. A store that is not shared answers 0.
  virtual Result<int64_t> ScopeVersion(const std::string& scope_key) {
    (void)scope_key;
    return int64_t{0};
  }
  // Leaderboard messages of one scope written or changed after version `since` (vectors
  // included), and the scope's version they bring the reader to.
  virtual Result<ScopeDelta> LoadScopeSince(std::string_view workspace, std::string_view user_id,
                                            int64_t since) {
    (void)workspace, (void)user_id, (void)since;
    return Status::Internal("LoadScopeSince: this store is not shared");
  }
  // Agent memories of a workspace inserted or changed after version `since`, and the ids deleted
  // after it.
  virtual Result<ScopeDelta> LoadAgentMemoriesSince(std::string_view workspace, int64_t since) {
    (void)workspace, (void)since;
    return Status::Internal("LoadAgentMemoriesSince: this store is not shared");
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
  // --- end several nodes ---

  // Images by hash; missing hashes are skipped.
  virtual Result<std::vector<ImageBlob>> GetImages(const std::vector<std::string>& sha256s) = 0;

  // A cheap probe that the store can still commit (used by health checks).
  virtual Status CheckWritable() = 0;

  // Stores' own figures for /metrics.
  struct Stats {
    int64_t memories = 0;
    int64_t bytes_on_disk = 0;
    // The write path, where the backend has one of its own (SQLite's group commit; elsewhere
    // group_commit is false and the figures below are not exported).
    bool group_commit = false;
    static constexpr std::array<double, 8> kCommitBuckets = {0.0005, 0.001, 0.002, 0.005,
                                                             0.01,   0.05,  0.25,  1};
    uint64_t commits = 0;                                     // transactions committed
    uint64_t writes = 0;                                      // writes they carried (group commit)
    double commit_seconds = 0;                                // BEGIN to end of COMMIT, summed
    std::array<uint64_t, kCommitBuckets.size()> commit_le{};  // cumulative counts per bucket
    uint64_t checkpoints_background = 0;
    uint64_t checkpoints_in_commit = 0;
    // SQLite's intake journal (accepted memory events), when it has one.
    std::optional<IntakeJournal::Stats> intake;
  };
  virtual Stats GetStats() = 0;

  // --- Leaderboard data lifecycle --- (sqlite_lifecycle.cc, pg_lifecycle.cc; docs/leaderboard.md)
  // Deletes every leaderboard message of one user (workspace + user_id), their vectors, the
  // images no other memory shows and the user's idempotency records, atomically and durably. An
  // unknown user is not an error (all counts 0). SQLite also leaves no readable copy of the text
  // in its files: deleted content is zeroed (secure_delete) and the WAL truncated before it
  // returns; kUnavailable when the WAL stayed busy (the rows are gone; a repeated call truncates).
  virtual Result<UserDeletion> DeleteLeaderboardUser(std::string_view workspace,
                                                     std::string_view user_id) {
    (void)workspace, (void)user_id;
    return Status::Internal("DeleteLeaderboardUser: not supported by this store");
  }
  // Users of a workspace whose latest leaderboard message was written (created_at) before
  // `before_us`, at most `limit` of them, in no particular order.
  virtual Result<std::vector<std::string>> LeaderboardUsersIdleSince(std::string_view workspace,
                                                                     int64_t before_us,
                                                                     size_t limit) {
    (void)workspace, (void)before_us, (void)limit;
    return Status::Internal("LeaderboardUsersIdleSince: not supported by this store");
  }
  // Deletes idempotency records created before `before_s` (Unix seconds); returns how many.
  virtual Result<int64_t> ExpireIdempotency(int64_t before_s) {
    (void)before_s;
    return Status::Internal("ExpireIdempotency: not supported by this store");
  }
  // --- end Leaderboard data lifecycle ---
};

}  // namespace engram
