// PgTxn: the SQL store core's statements (sql_txn.h) run in one libpqxx transaction that a
// pg::Pool opened (Write or Read). Errors surface as libpqxx exceptions, which the pool turns into
// Status values and, for serialization failures, into a second run of the whole transaction.
// Internal to store/.
//
// Thread-safety: used by the thread that runs the transaction. Ownership: borrows it.
#pragma once

#include <pqxx/pqxx>

#include "store/sql_txn.h"

namespace engram::pg {

class PgTxn final : public SqlTxn {
 public:
  explicit PgTxn(pqxx::transaction_base& txn) : txn_(txn) {}

  Result<int64_t> Exec(std::string_view sql, const SqlParams& params) override;
  Status Query(std::string_view sql, const SqlParams& params,
               const std::function<void(const RowReader&)>& row) override;
  std::string_view ByteCollation() const override { return "COLLATE \"C\""; }
  std::string_view PositionFunction() const override { return "strpos"; }

 private:
  pqxx::result Run(std::string_view sql, const SqlParams& params);

  pqxx::transaction_base& txn_;
};

}  // namespace engram::pg
