#include "store/pg_pool.h"

#include <fmt/format.h>

#include "common/codec.h"

namespace engram::pg {

namespace {

bool Retryable(const std::exception& e) {
  return dynamic_cast<const pqxx::serialization_failure*>(&e) != nullptr ||
         dynamic_cast<const pqxx::deadlock_detected*>(&e) != nullptr;
}

// The error's SQLSTATE, empty when it is not an SQL error.
std::string_view SqlState(const std::exception& e) {
  const auto* sql = dynamic_cast<const pqxx::sql_error*>(&e);
  return sql == nullptr ? std::string_view() : std::string_view(sql->sqlstate());
}

// Errors after which this connection's session cannot write while a new one may: a database or
// server turned read-only (a primary demoted to a standby, `default_transaction_read_only` set),
// an administrator's shutdown or termination of the session, a server still starting.
bool ReplacesConnection(const std::exception& e) {
  if (dynamic_cast<const pqxx::broken_connection*>(&e) != nullptr) return true;
  const std::string_view state = SqlState(e);
  return state == "25006" || state == "57P01" || state == "57P02" || state == "57P03" ||
         state.substr(0, 2) == "08";
}

}  // namespace

Status FromException(const std::exception& e, std::string_view what) {
  if (dynamic_cast<const pqxx::unique_violation*>(&e) != nullptr) {
    return Status::Conflict(fmt::format("{}: {}", what, e.what()));
  }
  // The database cannot take the statement now and may soon: out of disk, memory or
  // connections (class 53), read-only, shutting down or unreachable, a statement that ran out of
  // time (57014). The caller answers 503 and the client retries; nothing here is Engram's fault.
  const std::string_view state = SqlState(e);
  if (dynamic_cast<const pqxx::in_doubt_error*>(&e) != nullptr || ReplacesConnection(e) ||
      state.substr(0, 2) == "53" || state == "57014") {
    return Status::Unavailable(fmt::format("{}: database unavailable: {}", what, e.what()));
  }
  return Status::Internal(fmt::format("{}: {}", what, e.what()));
}

Result<std::unique_ptr<Pool>> Pool::Open(PoolOptions options) {
  if (options.connections < 1) return Status::InvalidParameter("pool needs at least 1 connection");
  std::unique_ptr<Pool> pool(new Pool(std::move(options)));
  {
    MutexLock lock(&pool->mu_);  // uncontended: the pool is not shared yet
    for (int i = 0; i < pool->options_.connections; ++i) {
      try {
        pool->idle_.push_back(std::make_unique<pqxx::connection>(pool->options_.url));
        pool->idle_.back()->set_variable("statement_timeout",
                                         std::to_string(pool->options_.statement_timeout.count()));
      } catch (const std::exception& e) {
        return FromException(e, "connecting to PostgreSQL");
      }
      ++pool->open_;
    }
  }
  return pool;
}

Pool::~Pool() = default;

Result<pqxx::connection*> Pool::Acquire() {
  MutexLock lock(&mu_);
  const auto deadline = std::chrono::steady_clock::now() + options_.acquire_timeout;
  bool signalled = true;
  while (idle_.empty() && signalled) signalled = cv_.WaitUntil(&mu_, deadline);
  if (idle_.empty()) return Status::Unavailable("no free database connection");
  pqxx::connection* conn = idle_.back().release();
  idle_.pop_back();
  return conn;
}

void Pool::Release(pqxx::connection* conn, bool broken) {
  std::unique_ptr<pqxx::connection> owned(conn);
  if (broken || !owned->is_open()) {
    // Replace it now; if the database is down, keep the dead one: its next use fails fast and
    // tries again.
    try {
      auto fresh = std::make_unique<pqxx::connection>(options_.url);
      fresh->set_variable("statement_timeout", std::to_string(options_.statement_timeout.count()));
      owned = std::move(fresh);
    } catch (const std::exception&) {
    }
  }
  {
    MutexLock lock(&mu_);
    idle_.push_back(std::move(owned));
  }
  cv_.Signal();
}

Status Pool::Run(const std::function<Status(pqxx::connection&)>& fn, bool retry) {
  for (int attempt = 0;; ++attempt) {
    auto conn = Acquire();
    if (!conn.ok()) return conn.status();
    bool broken = false;
    Status st;
    try {
      st = fn(**conn);
    } catch (const std::exception& e) {
      broken = ReplacesConnection(e);
      if (retry && Retryable(e) && attempt < options_.max_retries) {
        Release(*conn, false);
        continue;
      }
      // Once on a new connection: an idle connection the server ended (a restart, a failover)
      // fails its next use, and nothing it ran was committed (a commit whose outcome is unknown
      // is an in_doubt_error, never retried).
      if (retry && broken && attempt == 0) {
        Release(*conn, true);
        continue;
      }
      st = FromException(e, "database");
    }
    Release(*conn, broken);
    return st;
  }
}

Status Pool::Write(const std::function<Status(pqxx::work&)>& fn) {
  return Run(
      [&](pqxx::connection& conn) -> Status {
        pqxx::work txn(conn);
        Status st = fn(txn);
        if (!st.ok()) {
          txn.abort();
          return st;
        }
        txn.commit();
        return Status::Ok();
      },
      /*retry=*/true);
}

Status Pool::Read(const std::function<Status(pqxx::transaction_base&)>& fn) {
  return Run(
      [&](pqxx::connection& conn) -> Status {
        pqxx::transaction<pqxx::repeatable_read, pqxx::read_only> txn(conn);
        Status st = fn(txn);
        txn.commit();
        return st;
      },
      /*retry=*/true);
}

Status Pool::WithConnection(const std::function<Status(pqxx::connection&)>& fn) {
  return Run(fn, /*retry=*/false);
}

pqxx::binarystring VectorBytes(const std::vector<float>& v) {
  const std::string_view bytes = FloatVectorBytes(v);
  return pqxx::binarystring(bytes.data(), bytes.size());
}

std::vector<float> VectorFromField(const pqxx::field& f) {
  if (f.is_null()) return {};
  const pqxx::binarystring bytes(f);
  return FloatVectorFromBytes(std::string_view(bytes.get(), bytes.size()));
}

std::string ResultRow::Text(int i) const {
  return row_[i].is_null() ? std::string() : row_[i].as<std::string>();
}

int64_t ResultRow::Int(int i) const { return row_[i].is_null() ? 0 : row_[i].as<int64_t>(); }

std::string ResultRow::Bytes(int i) const {
  return row_[i].is_null() ? std::string() : pqxx::binarystring(row_[i]).str();
}

int64_t DbNowMicros(pqxx::transaction_base& txn) {
  return txn.exec("SELECT (extract(epoch from clock_timestamp()) * 1000000)::bigint")[0][0]
      .as<int64_t>();
}

int64_t BumpScopeVersion(pqxx::transaction_base& txn, const std::string& scope_key) {
  return txn
      .exec_params1(
          "WITH bumped AS (INSERT INTO scope_versions(scope, version) VALUES ($1, 1) "
          "ON CONFLICT (scope) DO UPDATE SET version = scope_versions.version + 1 "
          "RETURNING version) "
          "SELECT version, pg_notify('engram_scopes', $1) FROM bumped",
          scope_key)[0]
      .as<int64_t>();
}

int64_t ReadScopeVersion(pqxx::transaction_base& txn, const std::string& scope_key) {
  auto r = txn.exec_params("SELECT version FROM scope_versions WHERE scope = $1", scope_key);
  return r.empty() ? 0 : r[0][0].as<int64_t>();
}

}  // namespace engram::pg
