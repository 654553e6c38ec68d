// SqlTxn: the seam between the SQL store core and a backend. The core writes each statement, row
// codec and rule once (skill_sql.h, ...) against this interface; sqlite::SqliteTxn
// (sqlite_sql_txn.h) and pg::PgTxn (pg_sql_txn.h) run them on their own connection, inside the
// transaction their store opened. Internal to store/.
//
// Statements are written with PostgreSQL's numbered placeholders ($1, $2, ...), which SQLite reads
// as ?1, ?2, ... (RenderForSqlite). Everything else in a core statement must mean the same in both
// dialects: standard SQL, ON CONFLICT ... DO UPDATE with EXCLUDED, RETURNING, LIMIT before OFFSET,
// no casts; the collation of byte order comes from ByteCollation().
//
// Thread-safety: a transaction is used by the thread that runs it. A PostgreSQL transaction may
// be run again after a serialization failure, so code given a SqlTxn touches only it and its own
// locals.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"
#include "store/row_reader.h"

namespace engram {

// One statement parameter: NULL, a 64-bit integer, text or bytes (BLOB / BYTEA).
class SqlValue {
 public:
  enum class Kind { kNull, kInt, kText, kBytes };

  SqlValue() = default;                                // NULL
  SqlValue(int64_t v) : kind_(Kind::kInt), int_(v) {}  // NOLINT: implicit, as a literal reads
  SqlValue(int v) : kind_(Kind::kInt), int_(v) {}      // NOLINT
  SqlValue(std::string v) : kind_(Kind::kText), text_(std::move(v)) {}  // NOLINT
  SqlValue(std::string_view v) : kind_(Kind::kText), text_(v) {}        // NOLINT
  SqlValue(const char* v) : kind_(Kind::kText), text_(v) {}             // NOLINT

  static SqlValue Null() { return SqlValue(); }
  static SqlValue Bytes(std::string bytes);
  // NULL for an empty vector, else its float32 bytes (common/codec.h FloatVectorBytes).
  static SqlValue Vector(const std::vector<float>& v);
  static SqlValue OptionalInt(const std::optional<int64_t>& v) { return v ? SqlValue(*v) : Null(); }
  static SqlValue OptionalText(const std::optional<std::string>& v) {
    return v ? SqlValue(*v) : Null();
  }

  Kind kind() const { return kind_; }
  int64_t int_value() const { return int_; }
  // The text or the bytes.
  const std::string& text() const { return text_; }

 private:
  Kind kind_ = Kind::kNull;
  int64_t int_ = 0;
  std::string text_;
};

using SqlParams = std::vector<SqlValue>;

// Columns of a row that only one store keeps (PostgreSQL's job leases), with their values: a core
// INSERT appends them to its own columns and parameters.
struct ExtraColumns {
  std::vector<std::string_view> names;
  SqlParams values;
};

// "$first, $first+1, ..." : `count` placeholders.
std::string Placeholders(int first, int count);

// "INSERT INTO table(columns, extra names) VALUES($1, ..., $n)", with extra's values appended to
// `params`, which holds the values of `columns` in order.
std::string InsertInto(std::string_view table, std::string_view columns, const ExtraColumns& extra,
                       SqlParams& params);

class SqlTxn {
 public:
  // Runs a statement that returns no rows; the number of rows it changed.
  virtual Result<int64_t> Exec(std::string_view sql, const SqlParams& params) = 0;
  // Runs a query and calls `row` for each result row, in order.
  virtual Status Query(std::string_view sql, const SqlParams& params,
                       const std::function<void(const RowReader&)>& row) = 0;

  // The collation that orders text by its bytes, as a core statement names it after a column
  // ("ORDER BY id COLLATE ..."): BINARY in SQLite, "C" in PostgreSQL, whatever the database's
  // default.
  virtual std::string_view ByteCollation() const = 0;
  // The function F(text, part) that gives the 1-based position of `part` in `text`, 0 when it is
  // not there: instr in SQLite, strpos in PostgreSQL.
  virtual std::string_view PositionFunction() const = 0;

  // The first row of a query, read by `read`; std::nullopt when there is none.
  template <typename T, typename Read>
  Result<std::optional<T>> QueryFirst(std::string_view sql, const SqlParams& params, Read read) {
    std::optional<T> out;
    Status st = Query(sql, params, [&](const RowReader& r) {
      if (!out) out = read(r);
    });
    if (!st.ok()) return st;
    return out;
  }
  // The first row of a query, read by `read`; `missing` when there is none.
  template <typename T, typename Read>
  Result<T> QueryOne(std::string_view sql, const SqlParams& params, Read read, Status missing) {
    Result<std::optional<T>> found = QueryFirst<T>(sql, params, read);
    if (!found.ok()) return found.status();
    if (!found->has_value()) return missing;
    return std::move(**found);
  }
  // Every row of a query, each read by `read`.
  template <typename T, typename Read>
  Result<std::vector<T>> QueryAll(std::string_view sql, const SqlParams& params, Read read) {
    std::vector<T> out;
    Status st = Query(sql, params, [&](const RowReader& r) { out.push_back(read(r)); });
    if (!st.ok()) return st;
    return out;
  }

 protected:
  ~SqlTxn() = default;
};

// `sql` with each $N placeholder written ?N, as SQLite numbers parameters. A '$' inside a quoted
// literal or identifier is left alone.
std::string RenderForSqlite(std::string_view sql);

}  // namespace engram
