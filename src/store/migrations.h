// Schema migrations. The SQL lives in store/migrations/<backend>/NNNN_name.sql and is compiled into
// the binary (see CMakeLists.txt), so a binary always carries the schema it expects.
#pragma once

#include <sqlite3.h>

#include <vector>

#include "common/status.h"

namespace engram {

struct Migration {
  int version;       // NNNN from the file name; applied in increasing order
  const char* name;  // file name, for messages
  const char* sql;
};

const std::vector<Migration>& SqliteMigrations();
const std::vector<Migration>& PostgresMigrations();

// Applies every migration newer than PRAGMA user_version, each in its own transaction, and returns
// the resulting version. Refuses a database newer than this binary.
Result<int> ApplyMigrations(sqlite3* db, const std::vector<Migration>& migrations);

}  // namespace engram
