// Leaderboard messages: an add (its idempotency record, its images, its rows), the idempotency
// lookup and the image reads, written once over SqlTxn (sql_txn.h) for both stores. What differs
// stays in the stores: where a message's vector goes (AddHooks::insert_row) and PostgreSQL's
// scope versions (AddHooks::before_rows). Internal to store/.
//
// Thread-safety: functions use only the transaction they are given.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "store/sql_txn.h"
#include "store/types.h"

namespace engram::message_sql {

// The store's parts of an add.
struct AddHooks {
  // Runs once the idempotency key is claimed (so never for a duplicate) and before anything else
  // is written. May be empty.
  std::function<Status()> before_rows;
  // Inserts one message row of kind "message" and its vector, filling m.seq.
  std::function<Status(MemoryRecord&)> insert_row;
};

// One add, all or nothing within `txn`: when batch.idempotency names a key its user has stored,
// nothing is written and the outcome is a duplicate holding the stored record; otherwise the key
// is claimed (created `now_s`, seconds, as the expiry compares them), then the images (each
// stored once per hash) and the memories. Claiming first makes a concurrent add of the same key
// on PostgreSQL wait for the first one's end and then see its record.
Result<AddOutcome> Add(SqlTxn& txn, const AddBatch& batch, int64_t now_s, const AddHooks& hooks);

// The idempotency record of `key` for `user_id`.
Result<std::optional<IdempotencyRecord>> FindIdempotency(SqlTxn& txn, std::string_view user_id,
                                                         std::string_view key);

// The stored images among `sha256s`, in request order; hashes not stored are skipped.
Result<std::vector<ImageBlob>> GetImages(SqlTxn& txn, const std::vector<std::string>& sha256s);

}  // namespace engram::message_sql
