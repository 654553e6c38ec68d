#include "store/sql_txn.h"

#include <cctype>

#include "common/codec.h"

namespace engram {

SqlValue SqlValue::Bytes(std::string bytes) {
  SqlValue v;
  v.kind_ = Kind::kBytes;
  v.text_ = std::move(bytes);
  return v;
}

SqlValue SqlValue::Vector(const std::vector<float>& v) {
  if (v.empty()) return Null();
  return Bytes(std::string(FloatVectorBytes(v)));
}

std::string Placeholders(int first, int count) {
  std::string out;
  for (int i = 0; i < count; ++i) {
    if (i > 0) out += ", ";
    out += '$';
    out += std::to_string(first + i);
  }
  return out;
}

std::string InsertInto(std::string_view table, std::string_view columns, const ExtraColumns& extra,
                       SqlParams& params) {
  std::string names(columns);
  for (std::string_view name : extra.names) {
    names += ", ";
    names += name;
  }
  params.insert(params.end(), extra.values.begin(), extra.values.end());
  std::string sql = "INSERT INTO ";
  sql += table;
  sql += '(' + names + ") VALUES(" + Placeholders(1, static_cast<int>(params.size())) + ')';
  return sql;
}

std::string RenderForSqlite(std::string_view sql) {
  std::string out;
  out.reserve(sql.size());
  char quote = 0;  // the quote character of the literal or identifier being read, if any
  for (size_t i = 0; i < sql.size(); ++i) {
    const char c = sql[i];
    if (quote != 0) {
      if (c == quote) quote = 0;  // a doubled quote closes and reopens: the same either way
    } else if (c == '\'' || c == '"') {
      quote = c;
    } else if (c == '$' && i + 1 < sql.size() &&
               std::isdigit(static_cast<unsigned char>(sql[i + 1]))) {
      out.push_back('?');
      continue;
    }
    out.push_back(c);
  }
  return out;
}

}  // namespace engram
