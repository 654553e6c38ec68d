// PgPool: a fixed set of libpqxx connections to one PostgreSQL database, handed out one caller at a
// time, and the helpers every PgStore file uses to run a transaction and turn libpqxx exceptions
// into Status values (libpqxx reports everything by exception; nothing above store/ sees one).
//
// A connection that breaks is replaced on its next use and the transaction run once more on the
// new one, so a PostgreSQL restart costs the requests in flight, not the node; so is one whose
// session turned read-only or was shut down, so a database made writable again (or a new primary
// behind the same address) takes writes without a restart of the node. Transactions that fail with
// a serialization failure or a deadlock are run again (at most `max_retries` times): the caller's
// function must therefore only touch the transaction and its own locals.
//
// Thread-safety: all methods are safe to call concurrently.
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <pqxx/pqxx>
#include <string>
#include <string_view>
#include <vector>

#include "common/mutex.h"
#include "common/status.h"
#include "store/row_reader.h"

namespace engram::pg {

struct PoolOptions {
  std::string url;  // libpq connection string or postgresql:// URI
  int connections = 8;
  std::chrono::milliseconds acquire_timeout{10000};  // waiting for a free connection
  std::chrono::milliseconds statement_timeout{30000};
  int max_retries = 5;  // serialization failures and deadlocks
};

class Pool {
 public:
  // Connects every connection now, so a wrong URL fails at start-up with libpq's message.
  static Result<std::unique_ptr<Pool>> Open(PoolOptions options);
  ~Pool();

  // Runs fn(txn) in a read-write transaction (READ COMMITTED) and commits it. fn returns a Status;
  // a non-OK Status rolls back. Exceptions from libpqxx become Status values.
  Status Write(const std::function<Status(pqxx::work&)>& fn);
  // Runs fn(txn) in a REPEATABLE READ READ ONLY transaction: every statement sees one snapshot.
  Status Read(const std::function<Status(pqxx::transaction_base&)>& fn);
  // Runs fn(conn) on a pooled connection outside any transaction (LISTEN, DDL with its own locks).
  Status WithConnection(const std::function<Status(pqxx::connection&)>& fn);

 private:
  explicit Pool(PoolOptions options) : options_(std::move(options)) {}
  Result<pqxx::connection*> Acquire() EXCLUDES(mu_);
  void Release(pqxx::connection* conn, bool broken) EXCLUDES(mu_);
  Status Run(const std::function<Status(pqxx::connection&)>& fn, bool retry);

  PoolOptions options_;
  Mutex mu_;
  CondVar cv_;
  std::vector<std::unique_ptr<pqxx::connection>> idle_ GUARDED_BY(mu_);
  int open_ GUARDED_BY(mu_) = 0;  // connections handed out + idle
};

// The Status for a libpqxx / std exception (unique violation → kConflict; a broken connection, a
// read-only or shutting-down server, a lack of disk, memory or connections and a statement
// timeout → kUnavailable; everything else kInternal), with `what` naming the operation.
Status FromException(const std::exception& e, std::string_view what);

// float32 vectors as little-endian bytes (BYTEA), as SQLite stores them.
pqxx::binarystring VectorBytes(const std::vector<float>& v);
std::vector<float> VectorFromField(const pqxx::field& f);

// One row of a result, as a RowReader.
class ResultRow final : public RowReader {
 public:
  explicit ResultRow(const pqxx::row& row) : row_(row) {}
  bool IsNull(int i) const override { return row_[i].is_null(); }
  std::string Text(int i) const override;
  int64_t Int(int i) const override;
  std::string Bytes(int i) const override;
  std::vector<float> Vector(int i) const override { return VectorFromField(row_[i]); }

 private:
  const pqxx::row& row_;
};

// The database clock in microseconds since the epoch (leases use it so node clocks may differ).
int64_t DbNowMicros(pqxx::transaction_base& txn);

// The channel on which every version bump is announced (payload: the scope key) at commit.
inline constexpr const char* kScopeChannel = "engram_scopes";

// Bumps the version of `scope_key` (creating it at 1), announces it on kScopeChannel, and returns
// the new version. Takes the row
// lock that serialises the scope's writers until the transaction ends; call it before writing the
// scope's rows, and bump several scopes in sorted key order so writers never deadlock.
int64_t BumpScopeVersion(pqxx::transaction_base& txn, const std::string& scope_key);
// 0 when the scope was never written.
int64_t ReadScopeVersion(pqxx::transaction_base& txn, const std::string& scope_key);

}  // namespace engram::pg
