// The one query both backends answer CountWorkspaces with, and the folding of its rows.
// Internal to store/. Thread-safety: pure functions.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "store/sql_txn.h"
#include "store/workspace_census.h"

namespace engram::census_query {

// Rows (tag, workspace, a, b, c), every count a 64-bit integer; plain SQL both SQLite and
// PostgreSQL run, each (tag, workspace) once:
//   'l' Leaderboard: users, messages, 0      'm' agent memories: users, memories, 0
//   'e' memory events: unfinished, all, 0    's' skills: owners, skills, 0
//   't' skill tasks: unfinished, all, 0      'k' knowledge bases, documents, processing
// The unfinished conditions are the ones the partial indexes of the migrations name.
const std::string& Sql();

// The workspaces seen so far, by name (a std::map: bytewise order whatever the collation).
using Tally = std::map<std::string, WorkspaceCounts, std::less<>>;

// Adds one row of Sql() to `tally`.
void Add(std::string_view tag, std::string_view workspace, int64_t a, int64_t b, int64_t c,
         Tally* tally);
// Counts one event acknowledged but not yet in its table (SQLite's intake journal) as unfinished.
void AddAcceptedEvent(std::string_view workspace, Tally* tally);
std::vector<WorkspaceCounts> Finish(Tally tally);

// Sql() run on `txn`, its rows added to a new tally.
Result<Tally> Count(SqlTxn& txn);

}  // namespace engram::census_query
