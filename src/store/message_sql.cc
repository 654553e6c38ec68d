#include "store/message_sql.h"

#include <algorithm>

namespace engram::message_sql {

namespace {

// Stores `record` unless its user has the key already; true when this call stored it.
Result<bool> ClaimIdempotency(SqlTxn& txn, const IdempotencyRecord& record, int64_t now_s) {
  Result<int64_t> inserted = txn.Exec(
      "INSERT INTO idempotency(user_id, key, body_hash, response, created_at) "
      "VALUES($1, $2, $3, $4, $5) ON CONFLICT (user_id, key) DO NOTHING",
      {record.user_id, record.key, record.body_hash, record.response_json, now_s});
  if (!inserted.ok()) return inserted.status();
  return *inserted > 0;
}

// Stores each image unless its hash is stored, in hash order: concurrent PostgreSQL writers of
// the same images lock them in one order and never deadlock.
Status InsertImages(SqlTxn& txn, const std::vector<ImageBlob>& images) {
  std::vector<const ImageBlob*> sorted;
  sorted.reserve(images.size());
  for (const ImageBlob& img : images) sorted.push_back(&img);
  std::sort(sorted.begin(), sorted.end(),
            [](const ImageBlob* a, const ImageBlob* b) { return a->sha256 < b->sha256; });
  for (const ImageBlob* img : sorted) {
    Result<int64_t> n = txn.Exec(
        "INSERT INTO images(sha256, mime, bytes) VALUES($1, $2, $3) "
        "ON CONFLICT (sha256) DO NOTHING",
        {img->sha256, img->mime, SqlValue::Bytes(img->bytes)});
    if (!n.ok()) return n.status();
  }
  return Status::Ok();
}

}  // namespace

Result<AddOutcome> Add(SqlTxn& txn, const AddBatch& batch, int64_t now_s, const AddHooks& hooks) {
  AddOutcome outcome;
  if (batch.idempotency) {
    const IdempotencyRecord& idem = *batch.idempotency;
    Result<bool> claimed = ClaimIdempotency(txn, idem, now_s);
    if (!claimed.ok()) return claimed.status();
    if (!*claimed) {
      // PostgreSQL (READ COMMITTED): this statement sees the row the winner committed.
      Result<std::optional<IdempotencyRecord>> existing =
          FindIdempotency(txn, idem.user_id, idem.key);
      if (!existing.ok()) return existing.status();
      if (!existing->has_value()) {
        return Status::Internal("idempotency record vanished after a conflict");
      }
      outcome.duplicate = true;
      outcome.existing = std::move(**existing);
      return outcome;  // nothing else is written
    }
  }
  if (hooks.before_rows) ENGRAM_RETURN_IF_ERROR(hooks.before_rows());
  ENGRAM_RETURN_IF_ERROR(InsertImages(txn, batch.images));
  outcome.stored = batch.memories;
  for (MemoryRecord& m : outcome.stored) ENGRAM_RETURN_IF_ERROR(hooks.insert_row(m));
  return outcome;
}

Result<std::optional<IdempotencyRecord>> FindIdempotency(SqlTxn& txn, std::string_view user_id,
                                                         std::string_view key) {
  return txn.QueryFirst<IdempotencyRecord>(
      "SELECT body_hash, response FROM idempotency WHERE user_id = $1 AND key = $2", {user_id, key},
      [&](const RowReader& r) {
        return IdempotencyRecord{std::string(key), r.Text(0), r.Text(1), std::string(user_id)};
      });
}

Result<std::vector<ImageBlob>> GetImages(SqlTxn& txn, const std::vector<std::string>& sha256s) {
  std::vector<ImageBlob> out;
  // One lookup per hash: the answer follows the request's order.
  for (const std::string& sha : sha256s) {
    Result<std::optional<ImageBlob>> image = txn.QueryFirst<ImageBlob>(
        "SELECT mime, bytes FROM images WHERE sha256 = $1", {sha}, [&](const RowReader& r) {
          return ImageBlob{sha, r.Text(0), r.Bytes(1)};
        });
    if (!image.ok()) return image.status();
    if (image->has_value()) out.push_back(std::move(**image));
  }
  return out;
}

}  // namespace engram::message_sql
