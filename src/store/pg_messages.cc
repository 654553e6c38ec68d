// PgStore: leaderboard messages, vectors and images.
#include <fmt/format.h>

#include <algorithm>
#include <map>

#include "store/memory_rows.h"
#include "store/pg_rows.h"
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

// The idempotency record of `key` for `user_id`, as `txn` sees it.
std::optional<IdempotencyRecord> ReadIdempotency(pqxx::transaction_base& txn,
                                                 const std::string& user_id,
                                                 const std::string& key) {
  auto rows = txn.exec_params(
      "SELECT body_hash, response FROM idempotency WHERE user_id = $1 AND key = $2", user_id, key);
  if (rows.empty()) return std::nullopt;
  return IdempotencyRecord{key, rows[0][0].as<std::string>(), rows[0][1].as<std::string>(),
                           user_id};
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
  // Sorted, so writers of overlapping scopes lock them in one order and never deadlock; images
  // likewise (a concurrent insert of the same hash waits for the first).
  std::sort(scopes.begin(), scopes.end());
  scopes.erase(std::unique(scopes.begin(), scopes.end()), scopes.end());
  std::vector<const ImageBlob*> images;
  for (const auto& img : batch.images) images.push_back(&img);
  std::sort(images.begin(), images.end(),
            [](const ImageBlob* a, const ImageBlob* b) { return a->sha256 < b->sha256; });

  AddOutcome outcome;
  Status st = pool_->Write([&](pqxx::work& txn) -> Status {
    outcome = {};
    if (batch.idempotency) {
      // First, so a duplicate writes nothing. A concurrent transaction inserting the same key
      // (on any node) makes this wait for its end, then conflict: exactly one of them stores.
      const IdempotencyRecord& idem = *batch.idempotency;
      auto inserted = txn.exec_params(
          "INSERT INTO idempotency(user_id, key, body_hash, response, created_at) "
          "VALUES($1, $2, $3, $4, extract(epoch FROM now())::bigint) "
          "ON CONFLICT (user_id, key) DO NOTHING RETURNING key",
          idem.user_id, idem.key, idem.body_hash, idem.response_json);
      if (inserted.empty()) {
        // READ COMMITTED: this statement sees the row the winner committed.
        auto existing = ReadIdempotency(txn, idem.user_id, idem.key);
        if (!existing) return Status::Internal("idempotency record vanished after a conflict");
        outcome.duplicate = true;
        outcome.existing = std::move(*existing);
        return Status::Ok();  // nothing else was written
      }
    }
    std::map<std::string, int64_t> versions;
    for (const auto& scope : scopes) versions[scope] = pg::BumpScopeVersion(txn, scope);
    for (const ImageBlob* img : images) {
      txn.exec_params(
          "INSERT INTO images(sha256, mime, bytes) VALUES($1, $2, $3) "
          "ON CONFLICT (sha256) DO NOTHING",
          img->sha256, img->mime, pqxx::binarystring(img->bytes));
    }
    outcome.stored = batch.memories;
    for (auto& m : outcome.stored) {
      ENGRAM_RETURN_IF_ERROR(pg::InsertMemoryRow(
          txn, "message", versions.at(ScopeKeyMessages(m.workspace, m.user_id)), m));
    }
    return Status::Ok();
  });
  if (!st.ok()) return st;
  return outcome;
}

Result<std::vector<MemoryRecord>> PgStore::LoadScope(std::string_view workspace,
                                                     std::string_view user_id) {
  std::vector<MemoryRecord> out;
  // No stored text holds a NUL (writes refuse it), and libpq would cut the key at it.
  if (HasNul(workspace) || HasNul(user_id)) return out;
  Status st = pool_->Read([&](pqxx::transaction_base& txn) -> Status {
    out.clear();
    auto rows = txn.exec_params(fmt::format("SELECT {} FROM memories WHERE kind = 'message' AND "
                                            "workspace = $1 AND user_id = $2 ORDER BY seq",
                                            pg::kMemoryColumns),
                                std::string(workspace), std::string(user_id));
    for (const auto& r : rows) out.push_back(memory_rows::ReadMemoryRow(pg::ResultRow(r)));
    return Status::Ok();
  });
  if (!st.ok()) return st;
  return out;
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
    auto rows = txn.exec_params(
        fmt::format("SELECT {} FROM memories WHERE kind = 'message' AND workspace = $1 AND "
                    "user_id = $2 AND version > $3 ORDER BY seq",
                    pg::kMemoryColumns),
        std::string(workspace), std::string(user_id), since);
    for (const auto& r : rows)
      delta.upserts.push_back(memory_rows::ReadMemoryRow(pg::ResultRow(r)));
    return Status::Ok();
  });
  if (!st.ok()) return st;
  return delta;
}

Result<std::optional<IdempotencyRecord>> PgStore::FindIdempotency(std::string_view user_id,
                                                                  std::string_view key) {
  std::optional<IdempotencyRecord> found;
  if (HasNul(user_id) || HasNul(key)) return found;  // never stored
  Status st = pool_->Read([&](pqxx::transaction_base& txn) -> Status {
    found = ReadIdempotency(txn, std::string(user_id), std::string(key));
    return Status::Ok();
  });
  if (!st.ok()) return st;
  return found;
}

Result<std::vector<ImageBlob>> PgStore::GetImages(const std::vector<std::string>& sha256s) {
  std::vector<ImageBlob> out;
  if (sha256s.empty()) return out;
  Status st = pool_->Read([&](pqxx::transaction_base& txn) -> Status {
    out.clear();
    // One lookup per hash keeps SQLite's answer exactly: request order, missing ones skipped.
    for (const auto& sha : sha256s) {
      if (HasNul(sha)) continue;  // never stored
      auto rows = txn.exec_params("SELECT mime, bytes FROM images WHERE sha256 = $1", sha);
      if (rows.empty()) continue;
      out.push_back({sha, rows[0][0].as<std::string>(), pqxx::binarystring(rows[0][1]).str()});
    }
    return Status::Ok();
  });
  if (!st.ok()) return st;
  return out;
}

}  // namespace engram
