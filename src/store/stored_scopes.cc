#include "store/stored_scopes.h"

#include <algorithm>
#include <string>

namespace engram::stored_scopes {

void Add(std::string_view tag, std::string_view workspace, std::string_view key,
         StoredScopes* out) {
  std::string ws(workspace);
  if (tag == "l") {
    out->leaderboard_users.emplace_back(std::move(ws), std::string(key));
  } else if (tag == "m") {
    out->memory_workspaces.push_back(std::move(ws));
  } else if (tag == "s") {
    out->skill_workspaces.push_back(std::move(ws));
  } else if (tag == "k") {
    out->knowledge_bases.emplace_back(std::move(ws), std::string(key));
  }
}

void Sort(StoredScopes* out) {
  std::sort(out->leaderboard_users.begin(), out->leaderboard_users.end());
  std::sort(out->memory_workspaces.begin(), out->memory_workspaces.end());
  std::sort(out->skill_workspaces.begin(), out->skill_workspaces.end());
  std::sort(out->knowledge_bases.begin(), out->knowledge_bases.end());
}

Result<StoredScopes> List(SqlTxn& txn) {
  StoredScopes out;
  ENGRAM_RETURN_IF_ERROR(
      txn.Query(kSql, {}, [&](const RowReader& r) { Add(r.Text(0), r.Text(1), r.Text(2), &out); }));
  Sort(&out);
  return out;
}

}  // namespace engram::stored_scopes
