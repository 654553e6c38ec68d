// SqliteStore: the embedded default Store, one SQLite database file in WAL mode.
//
// Write path (group commit): callers enqueue writes; a single writer thread takes every queued
// write, runs them in one transaction (each inside its own savepoint, so one bad write cannot spoil
// the others), commits once (synchronous=FULL: the WAL is fsynced), then answers every caller.
// Concurrent writers therefore share one fsync instead of paying one each.
//
// Reads use a small pool of separate connections; WAL lets them run beside the writer. The WAL is
// copied back into the database file by a WalCheckpointer thread, not inside a commit.
// Out of disk space: a write that fails with SQLITE_FULL is answered kUnavailable (503) and never
// reported committed; SQLite may then roll back the whole group transaction, so the group's other
// writes fail with it. The writer keeps taking writes and commits again once there is room.
// A failed fsync or write (an I/O error) is treated the same way: answered kUnavailable, never
// reported committed, and the next commit that succeeds ends it. CheckWritable reports the state
// (with the intake journal's) and, past a backoff, probes with a commit of its own (after checking
// the directory for free space when the disk was full), so health recovers without a write. A stop
// on a nearly full disk skips the closing checkpoint, which could grow the database file, and keeps
// the WAL for the next open. When the database cannot be opened for writing because the disk is
// full, it is opened read-only: reads are served, writes answer kUnavailable, and a restart once
// space is freed makes it writable again (the steps skipped at open, migrations and storing the
// intake journal's leftover events, then run; re-running them under live readers is not worth the
// complexity).
//
// Thread-safety: all public methods are safe to call concurrently.
#pragma once

#include <sqlite3.h>

#include <chrono>
#include <deque>
#include <functional>
#include <future>
#include <memory>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include "common/clock.h"
#include "common/mutex.h"
#include "store/intake_journal.h"
#include "store/sqlite_sql_txn.h"
#include "store/store.h"
#include "store/wal_checkpointer.h"

namespace engram {

struct SqliteStoreOptions {
  std::string path;               // database file; its directory must exist
  int read_connections = 4;       // pool size for concurrent reads
  size_t max_batch_writes = 512;  // writes grouped into one transaction at most
  bool synchronous_full = true;   // fsync on every commit; false only for throw-away benchmarks
  // WAL size (4 KiB pages) that starts a background checkpoint. Each time the WAL restarts, one
  // commit copies the last few pages itself (0.5–3 ms here), so this sets how often a commit is
  // slow: at SQLite's own 1,000 it was every ~60 commits under a V4 add load, enough to lift the
  // add acknowledgement's p99. 16,000 (64 MiB) makes it every ~1,000: measured 200 adds/s p99
  // 4.7–11.7 → 2.9–5.1 ms, 500 adds/s 7.6–10.9 → 4.1–7.5 ms (3 alternating runs with 1,000 /
  // 4,000 / 16,000). Cost: up to 64 MiB of WAL on disk, replayed at the next open after a crash.
  int wal_checkpoint_pages = 16000;
  // Directory of the intake journal (created if missing) that AcceptEvent appends new events to,
  // answering after one small fdatasync instead of a group transaction (see intake_journal.h);
  // an event's row is written once, with its end. Empty: AcceptEvent is InsertEvent.
  std::string intake_journal_dir;
  // Name of the SQLite VFS every connection opens the database through (empty: SQLite's default).
  // Tests inject disk faults through one (sqlite_fault_vfs.h).
  std::string vfs;
  // Health probes' backoff, commit timings, the intake journal's backoff, and the times the store
  // stamps itself (history rows, event and skill updates, idempotency records); null:
  // RealClock(). (PostgreSQL stamps with the database's time, the one clock all nodes share.)
  const Clock* clock = nullptr;
  // Opens for reads only, beside a server that may be writing (engram export): no writer, no
  // migrations (the schema must be current), no intake journal. Writes answer kUnavailable.
  bool read_only = false;
  // A file this store holds an exclusive lock (flock) on while it is open, so that a second
  // process cannot write the same database behind the first's back (a server and an import).
  // Open fails with kUnavailable while another process holds it. Empty: no lock.
  std::string lock_file;
};

class SqliteStore final : public Store {
 public:
  // Opens (creating if needed) the database and applies pending migrations.
  static Result<std::unique_ptr<SqliteStore>> Open(SqliteStoreOptions options);
  ~SqliteStore() override;  // finishes queued writes, then closes

  // MessageStore and MemoryVectors: Leaderboard messages, vectors, images.
  Result<AddOutcome> Add(AddBatch batch) override;
  Result<std::vector<MemoryRecord>> LoadScope(std::string_view workspace,
                                              std::string_view user_id) override;
  Status PutVectors(const std::vector<VectorUpdate>& updates) override;
  // AgentMemoryStore (sqlite_agent_memories.cc).
  Result<std::vector<MemoryRecord>> LoadAgentMemories(std::string_view workspace) override;
  Result<MemoryChangeOutcome> ApplyMemoryChanges(MemoryChangeBatch batch) override;
  Result<std::vector<HistoryRecord>> GetHistory(std::string_view workspace,
                                                std::string_view memory_id) override;
  Result<std::vector<HistoryRecord>> LoadReplacedHistory(std::string_view workspace) override;
  Status InsertEvent(const MemoryEventRecord& event) override;
  void AcceptEvent(MemoryEventRecord event, std::function<void(Status)> done) override;
  Status UpdateEventStatus(std::string_view id, JobStatus status,
                           std::string_view error_message) override;
  Result<MemoryEventRecord> GetEvent(std::string_view workspace, std::string_view id) override;
  Result<std::vector<MemoryEventRecord>> UnfinishedEvents() override;
  Result<std::vector<MemoryEventRecord>> ListEvents(std::string_view workspace, size_t offset,
                                                    size_t limit, size_t* total) override;
  Status InsertFeedback(std::string_view workspace, const MemoryFeedbackRecord& feedback) override;
  Result<std::vector<MemoryFeedbackRecord>> GetFeedback(std::string_view workspace,
                                                        std::string_view memory_id) override;
  // SkillStore (sqlite_skills.cc).
  Result<std::vector<SkillRecord>> LoadSkills(std::string_view workspace) override;
  Result<SkillRecord> GetSkill(std::string_view workspace, std::string_view id) override;
  Result<std::vector<SkillVersionRecord>> GetSkillVersions(std::string_view workspace,
                                                           std::string_view id) override;
  Status ApplySkillChanges(SkillChangeBatch batch) override;
  Status InsertSkillTask(const SkillTaskRecord& task) override;
  Result<SkillTaskRecord> GetSkillTask(std::string_view workspace, std::string_view id) override;
  Result<std::vector<SkillTaskRecord>> UnfinishedSkillTasks() override;
  Result<std::vector<SkillTaskRecord>> ListSkillTasks(std::string_view workspace, size_t offset,
                                                      size_t limit, size_t* total) override;
  // KbStore (sqlite_kb.cc).
  Status PutKbDoc(const KbDocRecord& doc) override;
  Result<std::string> GetKbUpload(std::string_view workspace, std::string_view kb_id,
                                  std::string_view id, std::string_view job_id) override;
  Result<bool> FinishKbDoc(const KbDocRecord& doc,
                           const std::vector<KbChunkRecord>& chunks) override;
  Result<KbDocRecord> GetKbDoc(std::string_view workspace, std::string_view kb_id,
                               std::string_view id) override;
  Result<std::vector<KbDocRecord>> ListKbDocs(std::string_view workspace, std::string_view kb_id,
                                              size_t offset, size_t limit, size_t* total) override;
  Result<std::vector<KnowledgeBaseSummary>> ListKnowledgeBases(std::string_view workspace,
                                                               size_t offset, size_t limit,
                                                               size_t* total) override;
  Result<bool> DeleteKbDoc(std::string_view workspace, std::string_view kb_id,
                           std::string_view id) override;
  Result<std::vector<KbChunkRecord>> LoadKbChunks(std::string_view workspace,
                                                  std::string_view kb_id) override;
  Result<std::vector<KbDocRecord>> UnfinishedKbDocs() override;
  // MessageStore again: images, the writability probe; and the store's figures.
  Result<std::optional<IdempotencyRecord>> FindIdempotency(std::string_view user_id,
                                                           std::string_view key) override;
  Result<std::vector<ImageBlob>> GetImages(const std::vector<std::string>& sha256s) override;
  Status CheckWritable() override;
  // TransferStore: the scopes held (here), agent memories and skills as exported (in the files of
  // their domains).
  Result<StoredScopes> ListStoredScopes() override;
  Result<bool> ImportAgentMemory(const AgentMemoryImport& item) override;
  Result<bool> ImportSkill(const SkillRecord& skill,
                           const std::vector<SkillVersionRecord>& versions) override;
  // WorkspaceCensus (here).
  Result<std::vector<WorkspaceCounts>> CountWorkspaces() override;
  Stats GetStats() override;
  // The Leaderboard data lifecycle of MessageStore (sqlite_lifecycle.cc).
  Result<UserDeletion> DeleteLeaderboardUser(std::string_view workspace,
                                             std::string_view user_id) override;
  Result<std::vector<std::string>> LeaderboardUsersIdleSince(std::string_view workspace,
                                                             int64_t before_us,
                                                             size_t limit) override;
  Result<int64_t> ExpireIdempotency(int64_t before_s) override;

  // Schema version after migrations (PRAGMA user_version).
  int schema_version() const { return schema_version_; }

 private:
  // A unit of work run by the writer thread inside the group transaction.
  using WriteFn = std::function<Status(sqlite3*)>;
  struct PendingWrite {
    WriteFn fn;
    std::promise<Status> done;
  };

  explicit SqliteStore(SqliteStoreOptions options);
  Status Init();
  // Read connections only, after Init failed on a full disk: reads work, writes are refused.
  Status InitReadOnly();
  // Opens the intake journal and stores the events an earlier run left in it.
  Status OpenIntakeJournal();
  // Read-only start: the events an earlier run left in the intake journal are shown as they were
  // acknowledged (GetEvent, ListEvents), and stay in the journal for the next writable start.
  void ShowIntakeJournal();
  Status Lock();              // takes options_.lock_file, if any
  Status Submit(WriteFn fn);  // blocks until committed (or failed)
  Result<MemoryEventRecord> ReadEvent(std::string_view workspace, std::string_view id);
  // The events acknowledged through the journal that have no row yet (one that ended meanwhile
  // is read from its row instead): of `workspace`, or of every workspace when it is nullopt.
  // Takes accepted_mu_ for a snapshot, then reads `db`.
  Result<std::vector<MemoryEventRecord>> AcceptedWithoutRow(
      sqlite3* db, std::optional<std::string_view> workspace) EXCLUDES(accepted_mu_);
  // An accepted event ended (its row is committed): its journal record is released.
  void ForgetAcceptedEvent(const std::string& id);
  void WriterLoop();
  void RecordCommit(size_t writes, double seconds);
  // Copies the WAL into the database file and truncates it to zero bytes (retrying while readers
  // or the background checkpoint hold it): old page images of deleted rows leave the disk.
  Status TruncateWal();
  sqlite3* AcquireReader();
  void ReleaseReader(sqlite3* db);
  // Runs fn with a pooled read connection.
  template <typename Fn>
  auto WithReader(Fn&& fn) {
    sqlite3* db = AcquireReader();
    auto result = fn(db);
    ReleaseReader(db);
    return result;
  }

  // Runs fn, a SQL store core read (fn(SqlTxn&)), on a read connection; what it returns.
  template <typename Fn>
  auto Read(Fn&& fn) {
    return WithReader([&](sqlite3* db) {
      sqlite::SqliteTxn txn(db);
      return fn(txn);
    });
  }
  // Runs fn, a SQL store core write (fn(SqlTxn&) -> Status), in the writer's group commit.
  template <typename Fn>
  Status Write(Fn&& fn) {
    return Submit([&](sqlite3* db) -> Status {
      sqlite::SqliteTxn txn(db);
      return fn(txn);
    });
  }

  SqliteStoreOptions options_;
  const Clock* const clock_;      // options_.clock, or RealClock()
  sqlite3* writer_db_ = nullptr;  // only the writer thread touches it after Init
  int schema_version_ = 0;

  Mutex queue_mu_;
  CondVar queue_cv_;
  std::deque<PendingWrite> queue_ GUARDED_BY(queue_mu_);
  bool stopping_ GUARDED_BY(queue_mu_) = false;
  Status last_commit_ GUARDED_BY(queue_mu_);
  // last_commit_ failed for lack of space (else: an I/O error).
  bool out_of_space_ GUARDED_BY(queue_mu_) = false;
  // While last_commit_ is failed, CheckWritable probes at probe_at_, backing off from 50 ms to
  // 2 s: a commit through the writer (after a check for free space when out of space).
  Clock::SteadyTime probe_at_ GUARDED_BY(queue_mu_){};
  std::chrono::milliseconds probe_delay_ GUARDED_BY(queue_mu_){50};
  bool probing_ GUARDED_BY(queue_mu_) = false;  // one caller probes at a time; others answer
  // Not ok: opened read-only (InitReadOnly); set before any other thread runs.
  Status read_only_;
  int lock_fd_ = -1;  // options_.lock_file, locked; closed (unlocked) last
  // Write-path figures for GetStats, updated by the writer after each commit.
  Mutex stats_mu_;
  Stats write_stats_ GUARDED_BY(stats_mu_);  // only the write-path fields are used
  std::thread writer_;
  std::unique_ptr<WalCheckpointer> checkpointer_;  // destroyed before writer_db_ is closed
  // Stopped before the writer, destroyed after it (the writes of events still running release
  // their records).
  std::unique_ptr<IntakeJournal> journal_;
  // Events acknowledged through the journal that have not ended (their row is written with their
  // end): GetEvent finds them here meanwhile. number: their journal record, once synced.
  struct Accepted {
    MemoryEventRecord event;
    uint64_t number = IntakeJournal::kNoRecord;
  };
  Mutex accepted_mu_;
  std::unordered_map<std::string, Accepted> accepted_ GUARDED_BY(accepted_mu_);

  Mutex readers_mu_;
  CondVar readers_cv_;
  std::vector<sqlite3*> idle_readers_ GUARDED_BY(readers_mu_);
  std::vector<sqlite3*> all_readers_;  // filled by Init (or InitReadOnly), then read-only
};

}  // namespace engram
