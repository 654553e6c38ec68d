// RowReader: one result row of either store backend, read by column index, so that each row
// type's reader is written once for SQLite and PostgreSQL (job_rows, skill_rows, kb_rows,
// memory_rows). sqlite::StmtRow (sqlite_util.h) and pg::ResultRow (pg_pool.h) implement it.
// Internal to store/.
//
// Thread-safety: a reader is used by the thread that holds its statement or result.
// Ownership: a reader borrows its row, which must outlive it.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace engram {

class RowReader {
 public:
  virtual bool IsNull(int i) const = 0;
  // The column's value; "" / 0 / an empty vector for NULL.
  virtual std::string Text(int i) const = 0;
  virtual int64_t Int(int i) const = 0;
  // A BLOB / BYTEA column's bytes.
  virtual std::string Bytes(int i) const = 0;
  // A vector column: float32 bytes (common/codec.h FloatVectorBytes).
  virtual std::vector<float> Vector(int i) const = 0;

 protected:
  ~RowReader() = default;
};

}  // namespace engram
