// WalCheckpointer: copies a SQLite write-ahead log back into the database file on its own thread
// and connection, so that no commit pays for it.
//
// Left to SQLite, the commit that takes the WAL past 1,000 pages runs the checkpoint itself: it
// writes those pages into the database file and fsyncs it before the commit returns, and every
// write queued behind it (an add waiting for its acknowledgement) waits too. Here the writer's
// commits only report the WAL's size (a WAL hook on the writer connection); past `trigger_pages`
// this thread runs a PASSIVE checkpoint, which copies what no reader still needs without taking
// the write lock, so commits go on meanwhile. SQLite restarts the WAL from its start only at a
// write that begins while everything is copied, which a background copy chasing a busy writer
// rarely allows; so once the thread has copied all but the last `tail_pages`, the next commit
// copies that short tail itself (one fsync of the database file and at most a few hundred
// pages, instead of the whole WAL), and the write after it restarts the WAL.
//
// Durability is unchanged: a commit is durable once its WAL frames are synced; the checkpoint
// syncs the database file before it lets the WAL be reused (its connection uses the writer's
// synchronous setting). A crash mid-checkpoint is recovered from the WAL at the next open.
//
// Thread-safety: the hook runs on the writer's thread while the checkpoint thread runs; the
// counters may be read from any thread; Start and the destructor are for the owner. The owner keeps
// the writer connection open until after this object is destroyed.
#pragma once

#include <sqlite3.h>

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <thread>

#include "common/mutex.h"
#include "common/status.h"

namespace engram {

struct WalCheckpointerOptions {
  std::string path;              // the database file (WAL mode)
  int trigger_pages = 1000;      // WAL size that wakes the checkpoint thread
  bool synchronous_full = true;  // as the writer: false skips the database file's fsync
  std::string vfs;               // as the writer's (empty: SQLite's default)
  // A WAL this many times past the trigger (the thread cannot keep up, or is stuck behind a long
  // reader) makes the committing writer checkpoint inline once, as SQLite would have.
  int inline_factor = 4;
  // The most pages a commit copies to let the WAL restart (and at most a quarter of the trigger);
  // a longer tail goes back to the thread, whose next, shorter copy leaves a shorter one.
  int tail_pages = 256;
};

class WalCheckpointer {
 public:
  // Opens its own connection to `options.path`, starts the thread and installs the WAL hook on
  // `writer` (which replaces SQLite's automatic checkpoints on that connection).
  static Result<std::unique_ptr<WalCheckpointer>> Start(WalCheckpointerOptions options,
                                                        sqlite3* writer);
  ~WalCheckpointer();  // removes the hook, stops the thread, closes its connection

  WalCheckpointer(const WalCheckpointer&) = delete;
  WalCheckpointer& operator=(const WalCheckpointer&) = delete;

  // Checkpoints run by the thread, and by commits (the short tails and the runaway backstop).
  uint64_t background_checkpoints() const { return background_.load(std::memory_order_relaxed); }
  uint64_t inline_checkpoints() const { return inline_.load(std::memory_order_relaxed); }

 private:
  WalCheckpointer(WalCheckpointerOptions options, sqlite3* writer);
  static int Hook(void* self, sqlite3* db, const char* schema, int wal_pages);
  void OnCommit(sqlite3* db, int wal_pages);
  void Loop();

  const WalCheckpointerOptions options_;
  sqlite3* const writer_;  // not owned
  sqlite3* db_ = nullptr;  // owned; only Loop uses it once started
  std::atomic<uint64_t> background_{0};
  std::atomic<uint64_t> inline_{0};
  // WAL frames the thread's last checkpoint had copied; 0 once the WAL was restarted.
  std::atomic<int> copied_{0};

  Mutex mu_;
  CondVar cv_;
  bool wanted_ GUARDED_BY(mu_) = false;
  bool stopping_ GUARDED_BY(mu_) = false;
  std::thread thread_;
};

}  // namespace engram
