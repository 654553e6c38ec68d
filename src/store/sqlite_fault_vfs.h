// FaultVfs: a SQLite VFS that passes every call to the default VFS and fails the ones a test asks
// it to, so that tests can show what the store does when the disk misbehaves: an fsync that
// fails (EIO), a write that comes up short, a write refused for lack of space (ENOSPC). SQLite's
// own test suite injects I/O faults the same way (test_vfs.c).
//
// Faults apply to the files of the kinds in `FaultPlan::files` (the main database, its WAL, ...)
// and last until cleared. A short write really writes the first half of its bytes before it
// fails, as a torn write would.
//
// Use: `FaultVfs vfs("engram-fault"); SqliteStoreOptions o; o.vfs = vfs.name();` then
// `vfs.Set({.fail_sync = true})` and `vfs.Set({})`. The VFS is registered (not as the default)
// for the object's lifetime; every connection opened through it must be closed before it is
// destroyed.
//
// Thread-safety: Set, plan and the counters may be called from any thread while connections use
// the VFS. Ownership: owns its registration; the default VFS is SQLite's.
#pragma once

#include <sqlite3.h>

#include <atomic>
#include <cstdint>
#include <string>

#include "common/mutex.h"

namespace engram {

struct FaultPlan {
  // SQLITE_OPEN_* kinds the faults apply to.
  int files = SQLITE_OPEN_MAIN_DB | SQLITE_OPEN_WAL;
  bool fail_sync = false;     // xSync answers SQLITE_IOERR_FSYNC without syncing
  bool short_writes = false;  // xWrite writes half its bytes, answers SQLITE_IOERR_WRITE
  bool full = false;          // xWrite writes nothing, answers SQLITE_FULL (ENOSPC)
};

class FaultVfs {
 public:
  explicit FaultVfs(std::string name);
  ~FaultVfs();
  FaultVfs(const FaultVfs&) = delete;
  FaultVfs& operator=(const FaultVfs&) = delete;

  const std::string& name() const { return name_; }
  void Set(const FaultPlan& plan) EXCLUDES(mu_);
  FaultPlan plan() const EXCLUDES(mu_);
  // The faults for a file of `kind` (an SQLITE_OPEN_* kind): the plan's, or none when the plan
  // does not target that kind.
  FaultPlan FaultsFor(int kind) const EXCLUDES(mu_);

  // Calls failed on purpose so far.
  uint64_t failed_syncs() const { return failed_syncs_.load(); }
  uint64_t failed_writes() const { return failed_writes_.load(); }

 private:
  static sqlite3_vfs* BaseOf(sqlite3_vfs* vfs);  // the default VFS behind `vfs`
  static int Open(sqlite3_vfs* vfs, const char* name, sqlite3_file* file, int flags,
                  int* out_flags);
  static int Write(sqlite3_file* file, const void* data, int bytes, sqlite3_int64 offset);
  static int Sync(sqlite3_file* file, int flags);

  const std::string name_;
  sqlite3_vfs* const base_;  // SQLite's default VFS
  sqlite3_vfs vfs_{};
  mutable Mutex mu_;
  FaultPlan plan_ GUARDED_BY(mu_);
  std::atomic<uint64_t> failed_syncs_{0};
  std::atomic<uint64_t> failed_writes_{0};
};

}  // namespace engram
