// PgStore: leaderboard messages, vectors and images.
#include <fmt/format.h>

#include <algorithm>
#include <map>

#include "common/time_util.h"
#include "store/message_sql.h"
#include "store/pg_rows.h"
#include "store/pg_sql_txn.h"
#include "store/pg_store.h"

namespace engram {

namespace {

using pg::HasNul;

// The seqs as a PostgreSQL array literal ("{1,2,3}"); libpqxx 6 has no array parameters.
std::string SeqArray(const std::vector<VectorUpdate>& updates) {
  std::string out = "{";
  for (size_t i = 0; i < updates.size(); ++i) {
    if (i > 0) out += ',';
    out += std::to_string(updates[i].seq);
  }
  return out + "}";
}

}  // namespace

Result<AddOutcome> PgStore::Add(AddBatch batch) {
  if (batch.idempotency) {
    ENGRAM_RETURN_IF_ERROR(pg::CheckText("idempotency key", batch.idempotency->key));
    ENGRAM_RETURN_IF_ERROR(pg::CheckText("idempotency user_id", batch.idempotency->user_id));
    ENGRAM_RETURN_IF_ERROR(pg::CheckText("idempotency body hash", batch.idempotency->body_hash));
    ENGRAM_RETURN_IF_ERROR(pg::CheckText("idempotency response", batch.idempotency->response_json));
  }
  for (const auto& img : batch.images) {
    ENGRAM_RETURN_IF_ERROR(pg::CheckText("image sha256", img.sha256));
    ENGRAM_RETURN_IF_ERROR(pg::CheckText("image mime", img.mime));
  }
  std::vector<std::string> scopes;
  for (const auto& m : batch.memories) {
    ENGRAM_RETURN_IF_ERROR(pg::CheckMemoryText(m));
    scopes.push_back(ScopeKeyMessages(m.workspace, m.user_id));
  }
  // Sorted, so writers of overlapping scopes lock them in one order and never deadlock (the core
  // stores images in hash order for the same reason).
  std::sort(scopes.begin(), scopes.end());
  scopes.erase(std::unique(scopes.begin(), scopes.end()), scopes.end());

  AddOutcome outcome;
  Status st = pool_->Write([&](pqxx::work& t) -> Status {
    pg::PgTxn txn(t);
    std::map<std::string, int64_t> versions;
    message_sql::AddHooks hooks;
    hooks.before_rows = [&]() -> Status {
      for (const auto& scope : scopes) versions[scope] = pg::BumpScopeVersion(t, scope);
      return Status::Ok();
    };
    hooks.insert_row = [&](MemoryRecord& m) {
      return pg::InsertMemoryRow(t, "message",
                                 versions.at(ScopeKeyMessages(m.workspace, m.user_id)), m);
    };
    // Seconds, as the expiry compares them.
    Result<AddOutcome> added = message_sql::Add(txn, batch, NowMicros() / 1000000, hooks);
    if (!added.ok()) return added.status();
    outcome = std::move(*added);
    return Status::Ok();
  });
  if (!st.ok()) return st;
  return outcome;
}

Result<std::vector<MemoryRecord>> PgStore::LoadScope(std::string_view workspace,
                                                     std::string_view user_id) {
  // No stored text holds a NUL (writes refuse it), and libpq would cut the key at it.
  if (HasNul(workspace) || HasNul(user_id)) return std::vector<MemoryRecord>{};
  return Read([&](SqlTxn& txn) {
    return memory_sql::LoadMemories(txn, pg::kMemories, memory_sql::kMessagesOfUser,
                                    {workspace, user_id});
  });
}

Status PgStore::PutVectors(const std::vector<VectorUpdate>& updates) {
  if (updates.empty()) return Status::Ok();
  for (const auto& u : updates) ENGRAM_RETURN_IF_ERROR(pg::CheckText("vector model", u.model));
  const std::string seqs = SeqArray(updates);
  return pool_->Write([&](pqxx::work& txn) -> Status {
    // The scopes of these memories, read without locks, then bumped in key order before any row
    // is written (the order every writer uses). Memories gone by then are skipped below.
    std::map<int64_t, std::string> scope_of;
    auto rows = txn.exec_params(
        "SELECT seq, kind, workspace, user_id FROM memories WHERE seq = ANY($1::bigint[])", seqs);
    std::map<std::string, int64_t> versions;
    for (const auto& r : rows) {
      const auto workspace = r[2].as<std::string>();
      std::string key = r[1].as<std::string>() == "memory"
                            ? ScopeKeyAgentMemories(workspace)
                            : ScopeKeyMessages(workspace, r[3].as<std::string>());
      versions[key] = 0;
      scope_of[r[0].as<int64_t>()] = std::move(key);
    }
    for (auto& [key, version] : versions) version = pg::BumpScopeVersion(txn, key);
    for (const auto& u : updates) {
      auto scope = scope_of.find(u.seq);
      if (scope == scope_of.end()) continue;  // no such memory (deleted meanwhile)
      txn.exec_params(
          "UPDATE memories SET vector = $1, vector_model = $2, version = $3 WHERE seq = $4",
          pg::VectorBytes(u.vector), u.model, versions.at(scope->second), u.seq);
    }
    return Status::Ok();
  });
}

Result<ScopeDelta> PgStore::LoadScopeSince(std::string_view workspace, std::string_view user_id,
                                           int64_t since) {
  ScopeDelta delta;
  if (HasNul(workspace) || HasNul(user_id)) return delta;  // never written: nothing changed
  const std::string key = ScopeKeyMessages(workspace, user_id);
  // One snapshot: a writer bumps the version and writes its rows in one transaction, so the rows
  // read here are exactly those of versions up to the one read.
  Status st = pool_->Read([&](pqxx::transaction_base& txn) -> Status {
    delta = {};
    delta.version = pg::ReadScopeVersion(txn, key);
    pg::PgTxn sql(txn);
    Result<std::vector<MemoryRecord>> rows = memory_sql::LoadMemories(
        sql, pg::kMemories, fmt::format("{} AND version > $3", memory_sql::kMessagesOfUser),
        {workspace, user_id, since});
    if (!rows.ok()) return rows.status();
    delta.upserts = std::move(*rows);
    return Status::Ok();
  });
  if (!st.ok()) return st;
  return delta;
}

Result<std::optional<IdempotencyRecord>> PgStore::FindIdempotency(std::string_view user_id,
                                                                  std::string_view key) {
  if (HasNul(user_id) || HasNul(key)) return std::optional<IdempotencyRecord>();  // never stored
  return Read([&](SqlTxn& txn) { return message_sql::FindIdempotency(txn, user_id, key); });
}

Result<std::vector<ImageBlob>> PgStore::GetImages(const std::vector<std::string>& sha256s) {
  // A hash with a NUL byte was never stored.
  std::vector<std::string> asked;
  for (const std::string& sha : sha256s) {
    if (!HasNul(sha)) asked.push_back(sha);
  }
  return Read([&](SqlTxn& txn) { return message_sql::GetImages(txn, asked); });
}

}  // namespace engram
