// Backup and restore of a SQLite data directory (`engram backup`, `engram restore`).
//
// A backup is a directory holding:
//   engram.db      SQLite's online backup of the database: copied inside one read transaction,
//                  so it is the database at one point in time, taken beside a serving server
//                  (WAL readers do not block its writer);
//   intake/        the intake journal's record files, copied before the database: an add
//                  acknowledged before the backup began is in one or the other (a record whose
//                  event is already stored is skipped when the server reads the journal back);
//   manifest.json  format version, Engram version, schema version, rows per table, and the size
//                  and SHA-256 of every file.
// It is written under a hidden temporary name beside DEST and renamed to DEST once every file and
// directory is synced: DEST either holds a whole backup or does not exist.
//
// Restore reads the manifest, refuses a backup whose files do not match it (size or checksum) or
// whose schema is newer than this binary's, and copies the files into an empty data directory,
// checking every byte against the manifest as it copies. The database goes into place last, by
// rename, so a restore that fails midway never leaves a database that looks whole.
//
// Thread-safety: free functions with their own connections and files; they may run in another
// process than the server, while it serves. Two backups into the same DEST at once are refused
// by the rename (the second finds DEST taken).
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "common/status.h"

namespace engram {

struct BackupFile {
  std::string path;  // relative to the backup: "engram.db" or "intake/intake-<n>.log"
  uint64_t bytes = 0;
  std::string sha256;  // lower-case hex
};

struct BackupManifest {
  static constexpr int kFormatVersion = 1;
  int format_version = kFormatVersion;
  std::string engram_version;
  std::string created_at;  // ISO 8601, UTC
  int schema_version = 0;  // the database's PRAGMA user_version
  std::vector<BackupFile> files;
  std::map<std::string, int64_t> rows;  // rows per table of the backed-up database

  std::string ToJson() const;
  // Refuses anything but this format: unknown version, a path outside the backup, a bad digest.
  static Result<BackupManifest> Parse(std::string_view json);
};

struct SqliteBackupOptions {
  std::string data_dir;        // the server's --data-dir: engram.db and intake/
  std::string dest;            // must not exist, or be an empty directory
  std::string engram_version;  // recorded in the manifest
  std::string vfs;             // SQLite VFS for both databases; empty: the default (tests: faults)
};

// Takes a backup of `data_dir` into `dest` and returns its manifest.
Result<BackupManifest> BackupSqliteDataDir(const SqliteBackupOptions& options);

// Reads `dir`'s manifest and checks every file it names against it.
Result<BackupManifest> VerifyBackup(const std::string& dir);

struct SqliteRestoreOptions {
  std::string source;    // a backup directory
  std::string data_dir;  // created if missing; must hold nothing
  // The newest schema this binary opens; a newer backup is refused.
  int max_schema_version = 0;
};

// Restores the backup at `source` into `data_dir` and returns its manifest.
Result<BackupManifest> RestoreSqliteDataDir(const SqliteRestoreOptions& options);

}  // namespace engram
