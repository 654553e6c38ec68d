// PgStore: the Store on PostgreSQL (libpqxx 6.4), for several Engram nodes sharing one database.
// PostgreSQL is the system of record; a write returns OK after its transaction committed
// (synchronous_commit as the server is configured: on by default, so the WAL is flushed).
//
// What several nodes need (schema: migrations/postgres/0001_init.sql; design: docs/scale-out.md):
//   * scope versions: every write bumps its scopes' counters first (serialising one scope's
//   writers)
//     and stamps its rows, so ScopeVersion() + Load*Since() bring a node's cached shard up to date
//     with only the rows that changed;
//   * idempotency across nodes: a request_id's row is inserted in the write's transaction; a
//     concurrent retry on another node waits for that transaction and then sees the stored answer;
//   * change notifications: every scope-version bump also NOTIFYs channel engram_scopes with the
//     scope key (delivered at commit); each node LISTENs and refreshes its cached shard early, so
//     the read-path version check usually finds nothing left to load;
//   * job leases: InsertEvent / InsertSkillTask / PutKbDoc give the job to this node for `lease`;
//     a background thread renews the leases of this node's unfinished jobs every lease / 3; the
//     Unfinished*() calls claim (FOR UPDATE SKIP LOCKED) jobs whose lease ran out, i.e. jobs of
//     nodes that died, and jobs never claimed.
// Migrations run under an advisory lock, so nodes starting together apply them once.
//
// Thread-safety: all public methods are safe to call concurrently.
#pragma once

#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <type_traits>
#include <vector>

#include "common/mutex.h"
#include "store/migrations.h"
#include "store/pg_pool.h"
#include "store/pg_sql_txn.h"
#include "store/store.h"

namespace engram {

struct PgStoreOptions {
  std::string url;      // postgresql://user:password@host:port/database (libpq syntax)
  int connections = 8;  // pool size
  std::string node_id;  // this node's name in job leases; empty = a new random id
  // A job whose node stopped renewing its lease is taken over by another node after this long.
  std::chrono::milliseconds lease{30000};
  std::chrono::milliseconds statement_timeout{30000};
};

class PgStore final : public Store {
 public:
  // Connects, applies pending migrations and starts the lease renewer.
  static Result<std::unique_ptr<PgStore>> Open(PgStoreOptions options);
  ~PgStore() override;  // stops the lease renewer

  // MessageStore and MemoryVectors: Leaderboard messages, vectors, images (pg_messages.cc).
  Result<AddOutcome> Add(AddBatch batch) override;
  Result<std::vector<MemoryRecord>> LoadScope(std::string_view workspace,
                                              std::string_view user_id) override;
  Status PutVectors(const std::vector<VectorUpdate>& updates) override;
  // AgentMemoryStore (pg_agent_memories.cc).
  Result<std::vector<MemoryRecord>> LoadAgentMemories(std::string_view workspace) override;
  Result<MemoryChangeOutcome> ApplyMemoryChanges(MemoryChangeBatch batch) override;
  Result<std::vector<HistoryRecord>> GetHistory(std::string_view workspace,
                                                std::string_view memory_id) override;
  Result<std::vector<HistoryRecord>> LoadReplacedHistory(std::string_view workspace) override;
  Status InsertEvent(const MemoryEventRecord& event) override;
  Status UpdateEventStatus(std::string_view id, JobStatus status,
                           std::string_view error_message) override;
  Result<MemoryEventRecord> GetEvent(std::string_view workspace, std::string_view id) override;
  Result<std::vector<MemoryEventRecord>> UnfinishedEvents() override;
  Result<std::vector<MemoryEventRecord>> ListEvents(std::string_view workspace, size_t offset,
                                                    size_t limit, size_t* total) override;
  Status InsertFeedback(std::string_view workspace, const MemoryFeedbackRecord& feedback) override;
  Result<std::vector<MemoryFeedbackRecord>> GetFeedback(std::string_view workspace,
                                                        std::string_view memory_id) override;
  // SkillStore (pg_skills.cc).
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
  // KbStore (pg_kb.cc).
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
  // ScopeSync and the deltas of shared stores.
  bool shared() const override { return true; }
  Result<int64_t> ScopeVersion(const std::string& scope_key) override;  // pg_store.cc
  Result<ScopeDelta> LoadScopeSince(std::string_view workspace, std::string_view user_id,
                                    int64_t since) override;  // pg_messages.cc
  Result<ScopeDelta> LoadAgentMemoriesSince(std::string_view workspace,
                                            int64_t since) override;  // pg_agent_memories.cc

  Result<std::optional<IdempotencyRecord>> FindIdempotency(std::string_view user_id,
                                                           std::string_view key) override;
  Result<std::vector<ImageBlob>> GetImages(const std::vector<std::string>& sha256s) override;
  // pg_store.cc.
  int AddChangeListener(std::function<void(const std::string& scope_key)> fn) override;
  void RemoveChangeListener(int id) override;
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
  // The Leaderboard data lifecycle of MessageStore (pg_lifecycle.cc).
  Result<UserDeletion> DeleteLeaderboardUser(std::string_view workspace,
                                             std::string_view user_id) override;
  Result<std::vector<std::string>> LeaderboardUsersIdleSince(std::string_view workspace,
                                                             int64_t before_us,
                                                             size_t limit) override;
  Result<int64_t> ExpireIdempotency(int64_t before_s) override;

  int schema_version() const { return schema_version_; }
  const std::string& node_id() const { return options_.node_id; }

 private:
  explicit PgStore(PgStoreOptions options) : options_(std::move(options)) {}
  Status Init();
  void RenewLoop() EXCLUDES(renew_mu_);
  // LISTENs on the scope-change channel on a connection of its own (reconnecting after errors)
  // and hands each payload to the listeners.
  void ListenLoop() EXCLUDES(renew_mu_);
  void Notify(const std::string& scope_key) EXCLUDES(listeners_mu_);
  int64_t lease_us() const { return options_.lease.count() * 1000; }
  // Runs fn, a SQL store core read (fn(SqlTxn&) returning a Result), in one read transaction;
  // its answer, or the transaction's error.
  template <typename Fn>
  std::invoke_result_t<Fn&, SqlTxn&> Read(Fn&& fn) {
    std::optional<std::invoke_result_t<Fn&, SqlTxn&>> out;
    Status st = pool_->Read([&](pqxx::transaction_base& t) -> Status {
      pg::PgTxn txn(t);
      out.emplace(fn(txn));
      return Status::Ok();
    });
    if (!st.ok()) return st;
    return std::move(*out);
  }

  // Runs fn, a SQL store core write (fn(SqlTxn&) -> Status), in one write transaction, which the
  // pool runs again after a serialization failure.
  template <typename Fn>
  Status Write(Fn&& fn) {
    return pool_->Write([&](pqxx::work& t) -> Status {
      pg::PgTxn txn(t);
      return fn(txn);
    });
  }

  PgStoreOptions options_;
  std::unique_ptr<pg::Pool> pool_;
  int schema_version_ = 0;

  Mutex renew_mu_;
  CondVar renew_cv_;
  bool stopping_ GUARDED_BY(renew_mu_) = false;
  std::thread renewer_;
  std::thread listener_;

  Mutex listeners_mu_;  // also held while listeners run, so removal waits for them
  std::map<int, std::function<void(const std::string&)>> listeners_ GUARDED_BY(listeners_mu_);
  int next_listener_ GUARDED_BY(listeners_mu_) = 1;
};

// Applies every migration newer than the database's schema_migrations version, under an advisory
// lock, each in its own transaction; returns the resulting version.
Result<int> ApplyPgMigrations(pg::Pool& pool, const std::vector<Migration>& migrations);

}  // namespace engram
