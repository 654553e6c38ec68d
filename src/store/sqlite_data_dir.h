// What a SQLite data directory (--data-dir) holds, named once for the server, the backup and the
// export and import commands. Thread-safety: constants and pure functions.
#pragma once

#include <filesystem>
#include <string>

#include "store/sqlite_store.h"

namespace engram::sqlite_data_dir {

inline constexpr const char* kDatabase = "engram.db";  // the SQLite database (WAL mode)
inline constexpr const char* kIntake = "intake";       // the intake journal's directory
inline constexpr const char* kLock = "engram.lock";    // held by the process that writes it

// The store options of a data directory opened for writing by one process (the server, an
// import): the database, its intake journal and the lock.
inline SqliteStoreOptions WritableOptions(const std::string& data_dir) {
  const std::filesystem::path dir(data_dir);
  return {.path = (dir / kDatabase).string(),
          .intake_journal_dir = (dir / kIntake).string(),
          .lock_file = (dir / kLock).string()};
}

// Opened for reads beside a server that may be writing it (engram export).
inline SqliteStoreOptions ReadOnlyOptions(const std::string& data_dir) {
  return {.path = (std::filesystem::path(data_dir) / kDatabase).string(), .read_only = true};
}

}  // namespace engram::sqlite_data_dir
