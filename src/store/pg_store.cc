// PgStore: opening, migrations, scope versions, lease renewal, health and figures. The record
// families live in pg_messages.cc, pg_agent_memories.cc, pg_skills.cc and pg_kb.cc.
#include "store/pg_store.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "common/ids.h"
#include "common/thread_util.h"
#include "store/census_query.h"
#include "store/job_rows.h"
#include "store/stored_scopes.h"

namespace engram {

namespace {
// The advisory lock key that serialises migrations of nodes starting together ("engram" in ASCII).
constexpr int64_t kMigrationLock = 0x656e6772616d;
}  // namespace

Result<int> ApplyPgMigrations(pg::Pool& pool, const std::vector<Migration>& migrations) {
  int current = 0;
  Status st = pool.WithConnection([&](pqxx::connection& conn) -> Status {
    // A session-level lock: it outlives the statement's own (non)transaction.
    {
      pqxx::nontransaction lock_txn(conn);
      lock_txn.exec_params("SELECT pg_advisory_lock($1)", kMigrationLock);
    }
    Status result;
    try {
      {
        pqxx::work txn(conn);
        txn.exec(
            "CREATE TABLE IF NOT EXISTS schema_migrations (version INTEGER PRIMARY KEY, "
            "name TEXT NOT NULL, applied_at TIMESTAMPTZ NOT NULL DEFAULT now())");
        current =
            txn.exec("SELECT coalesce(max(version), 0) FROM schema_migrations")[0][0].as<int>();
        txn.commit();
      }
      int latest = migrations.empty() ? 0 : migrations.back().version;
      if (current > latest) {
        result = Status::Unavailable(fmt::format(
            "database schema version {} is newer than this binary supports ({})", current, latest));
      }
      for (const Migration& m : migrations) {
        if (!result.ok() || m.version <= current) continue;
        pqxx::work txn(conn);
        txn.exec(m.sql);
        txn.exec_params("INSERT INTO schema_migrations(version, name) VALUES ($1, $2)", m.version,
                        std::string(m.name));
        txn.commit();
        current = m.version;
      }
    } catch (const std::exception& e) {
      result = pg::FromException(e, "migrating the database");
    }
    {
      pqxx::nontransaction unlock_txn(conn);
      unlock_txn.exec_params("SELECT pg_advisory_unlock($1)", kMigrationLock);
    }
    return result;
  });
  if (!st.ok()) return st;
  return current;
}

Result<std::unique_ptr<PgStore>> PgStore::Open(PgStoreOptions options) {
  if (options.node_id.empty()) options.node_id = NewId("node");
  if (options.lease.count() < 100) return Status::InvalidParameter("lease must be >= 100 ms");
  std::unique_ptr<PgStore> store(new PgStore(std::move(options)));
  ENGRAM_RETURN_IF_ERROR(store->Init());
  return store;
}

Status PgStore::Init() {
  auto pool = pg::Pool::Open({.url = options_.url,
                              .connections = options_.connections,
                              .statement_timeout = options_.statement_timeout});
  if (!pool.ok()) return pool.status();
  pool_ = std::move(pool).value();
  auto version = ApplyPgMigrations(*pool_, PostgresMigrations());
  if (!version.ok()) return version.status();
  schema_version_ = *version;
  // Jobs still leased to this node id were accepted by an earlier process of the same name (a
  // restart with --node-id): this process holds none of them yet. Free them for the Unfinished*()
  // claims; else the renewer below would keep extending them and no node would ever resume them.
  Status released = pool_->Write([&](pqxx::work& txn) -> Status {
    txn.exec_params("UPDATE memory_events SET lease_until = 0 WHERE lease_owner = $1 AND " +
                        job_rows::UnfinishedCondition(JobVocabulary::kMemoryEvent),
                    options_.node_id);
    txn.exec_params("UPDATE skill_tasks SET lease_until = 0 WHERE lease_owner = $1 AND " +
                        job_rows::UnfinishedCondition(JobVocabulary::kSkillTask),
                    options_.node_id);
    txn.exec_params("UPDATE kb_docs SET lease_until = 0 WHERE lease_owner = $1 AND " +
                        job_rows::UnfinishedCondition(JobVocabulary::kKbDocument),
                    options_.node_id);
    return Status::Ok();
  });
  if (!released.ok()) return released;
  renewer_ = std::thread([this] {
    NameThisThread("pg-lease");
    RenewLoop();
  });
  listener_ = std::thread([this] {
    NameThisThread("pg-listen");
    ListenLoop();
  });
  return Status::Ok();
}

namespace {

class ScopeReceiver final : public pqxx::notification_receiver {
 public:
  ScopeReceiver(pqxx::connection& conn, std::function<void(const std::string&)> on_payload)
      : pqxx::notification_receiver(conn, pg::kScopeChannel), on_payload_(std::move(on_payload)) {}
  void operator()(const std::string& payload, int /*backend_pid*/) override {
    on_payload_(payload);
  }

 private:
  std::function<void(const std::string&)> on_payload_;
};

}  // namespace

void PgStore::ListenLoop() {
  MutexLock lock(&renew_mu_);
  while (!stopping_) {
    lock.Unlock();
    try {
      pqxx::connection conn(options_.url);
      ScopeReceiver receiver(conn, [this](const std::string& key) { Notify(key); });
      // Short waits, so a stopping store is noticed within half a second.
      for (;;) {
        {
          MutexLock stop(&renew_mu_);
          if (stopping_) break;
        }
        conn.await_notification(0, 500000);
      }
    } catch (const std::exception& e) {
      spdlog::warn("scope change notifications interrupted (reads still check versions): {}",
                   e.what());
      MutexLock wait(&renew_mu_);
      const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(1);
      bool signalled = true;
      while (!stopping_ && signalled) signalled = renew_cv_.WaitUntil(&renew_mu_, deadline);
    }
    lock.Lock();
  }
}

void PgStore::Notify(const std::string& scope_key) {
  MutexLock lock(&listeners_mu_);
  for (auto& [id, fn] : listeners_) fn(scope_key);
}

int PgStore::AddChangeListener(std::function<void(const std::string& scope_key)> fn) {
  MutexLock lock(&listeners_mu_);
  const int id = next_listener_++;
  listeners_.emplace(id, std::move(fn));
  return id;
}

void PgStore::RemoveChangeListener(int id) {
  MutexLock lock(&listeners_mu_);
  listeners_.erase(id);
}

PgStore::~PgStore() {
  {
    MutexLock lock(&renew_mu_);
    stopping_ = true;
  }
  renew_cv_.SignalAll();
  if (renewer_.joinable()) renewer_.join();
  if (listener_.joinable()) listener_.join();
}

void PgStore::RenewLoop() {
  const auto period = options_.lease / 3;
  MutexLock lock(&renew_mu_);
  for (;;) {
    // Until the next renewal is due, or the store stops.
    const auto deadline = std::chrono::steady_clock::now() + period;
    bool signalled = true;
    while (!stopping_ && signalled) signalled = renew_cv_.WaitUntil(&renew_mu_, deadline);
    if (stopping_) return;
    lock.Unlock();
    Status st = pool_->Write([&](pqxx::work& txn) -> Status {
      const int64_t until = pg::DbNowMicros(txn) + lease_us();
      txn.exec_params("UPDATE memory_events SET lease_until = $2 WHERE lease_owner = $1 AND " +
                          job_rows::UnfinishedCondition(JobVocabulary::kMemoryEvent),
                      options_.node_id, until);
      txn.exec_params("UPDATE skill_tasks SET lease_until = $2 WHERE lease_owner = $1 AND " +
                          job_rows::UnfinishedCondition(JobVocabulary::kSkillTask),
                      options_.node_id, until);
      txn.exec_params("UPDATE kb_docs SET lease_until = $2 WHERE lease_owner = $1 AND " +
                          job_rows::UnfinishedCondition(JobVocabulary::kKbDocument),
                      options_.node_id, until);
      return Status::Ok();
    });
    if (!st.ok())
      spdlog::warn("renewing job leases of node {}: {}", options_.node_id, st.ToString());
    lock.Lock();
  }
}

Result<int64_t> PgStore::ScopeVersion(const std::string& scope_key) {
  int64_t version = 0;
  Status st = pool_->WithConnection([&](pqxx::connection& conn) -> Status {
    pqxx::nontransaction txn(conn);
    version = pg::ReadScopeVersion(txn, scope_key);
    return Status::Ok();
  });
  if (!st.ok()) return st;
  return version;
}

Status PgStore::CheckWritable() {
  return pool_->Write([&](pqxx::work& txn) -> Status {
    // A write that changes nothing: PostgreSQL refuses it where it would refuse any write (a
    // read-only database or session, a standby), and the pool then replaces the connection, so
    // the probe reports a recovered database without waiting for a write.
    txn.exec("DELETE FROM scope_versions WHERE false");
    return Status::Ok();
  });
}

Result<StoredScopes> PgStore::ListStoredScopes() {
  return Read([](SqlTxn& txn) { return stored_scopes::List(txn); });
}

Result<std::vector<WorkspaceCounts>> PgStore::CountWorkspaces() {
  Result<census_query::Tally> tally = Read([](SqlTxn& txn) { return census_query::Count(txn); });
  if (!tally.ok()) return tally.status();
  return census_query::Finish(std::move(*tally));
}

Store::Stats PgStore::GetStats() {
  Stats stats;
  Status st = pool_->Read([&](pqxx::transaction_base& txn) -> Status {
    // reltuples is the planner's estimate: exact counts would scan the table on every scrape.
    stats.memories =
        txn
            .exec(
                "SELECT greatest(reltuples, 0)::bigint FROM pg_class WHERE relname = 'memories'")[0]
                                                                                                 [0]
            .as<int64_t>();
    stats.bytes_on_disk =
        txn.exec("SELECT pg_database_size(current_database())")[0][0].as<int64_t>();
    return Status::Ok();
  });
  if (!st.ok()) spdlog::warn("reading store figures: {}", st.ToString());
  return stats;
}

}  // namespace engram
