#include "store/pg_sql_txn.h"

#include "common/codec.h"
#include "store/pg_pool.h"

namespace engram::pg {
namespace {

// One parameter as libpqxx 6 passes a run-time list of them: every value in text format, NULL
// included. Bytes go as BYTEA's hex input form (\x...), which the server decodes for the column.
struct Param {
  const SqlValue* value;
};

}  // namespace
}  // namespace engram::pg

namespace pqxx {

template <>
struct string_traits<engram::pg::Param> {
  static constexpr const char* name() noexcept { return "engram::pg::Param"; }
  static constexpr bool has_null() noexcept { return true; }
  static bool is_null(const engram::pg::Param& p) {
    return p.value->kind() == engram::SqlValue::Kind::kNull;
  }
  static engram::pg::Param null() { return {nullptr}; }
  static std::string to_string(const engram::pg::Param& p) {
    const engram::SqlValue& v = *p.value;
    switch (v.kind()) {
      case engram::SqlValue::Kind::kInt:
        return std::to_string(v.int_value());
      case engram::SqlValue::Kind::kBytes:
        return "\\x" + engram::HexEncode(v.text());
      case engram::SqlValue::Kind::kText:
      case engram::SqlValue::Kind::kNull:
        break;
    }
    return v.text();
  }
};

}  // namespace pqxx

namespace engram::pg {

pqxx::result PgTxn::Run(std::string_view sql, const SqlParams& params) {
  std::vector<Param> list;
  list.reserve(params.size());
  for (const SqlValue& v : params) list.push_back({&v});
  return txn_.exec_params(std::string(sql), pqxx::prepare::make_dynamic_params(list));
}

Result<int64_t> PgTxn::Exec(std::string_view sql, const SqlParams& params) {
  return static_cast<int64_t>(Run(sql, params).affected_rows());
}

Status PgTxn::Query(std::string_view sql, const SqlParams& params,
                    const std::function<void(const RowReader&)>& row) {
  const pqxx::result res = Run(sql, params);
  for (const auto& r : res) row(ResultRow(r));
  return Status::Ok();
}

}  // namespace engram::pg
