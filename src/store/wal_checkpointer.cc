#include "store/wal_checkpointer.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>

#include "common/thread_util.h"
#include "store/sqlite_util.h"

namespace engram {

WalCheckpointer::WalCheckpointer(WalCheckpointerOptions options, sqlite3* writer)
    : options_(std::move(options)), writer_(writer) {}

Result<std::unique_ptr<WalCheckpointer>> WalCheckpointer::Start(WalCheckpointerOptions options,
                                                                sqlite3* writer) {
  std::unique_ptr<WalCheckpointer> c(new WalCheckpointer(std::move(options), writer));
  int rc = sqlite3_open_v2(c->options_.path.c_str(), &c->db_,
                           SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOMUTEX,
                           sqlite::VfsName(c->options_.vfs));
  if (rc != SQLITE_OK) {
    return sqlite::ErrorStatus(c->db_, rc,
                               fmt::format("open {} for checkpoints", c->options_.path));
  }
  sqlite3_extended_result_codes(c->db_, 1);
  ENGRAM_RETURN_IF_ERROR(sqlite::ExecScript(c->db_, c->options_.synchronous_full
                                                        ? "PRAGMA synchronous=FULL;"
                                                        : "PRAGMA synchronous=OFF;"));
  c->thread_ = std::thread([raw = c.get()] {
    NameThisThread("sqlite-ckpt");
    raw->Loop();
  });
  sqlite3_wal_hook(writer, &WalCheckpointer::Hook, c.get());
  return c;
}

WalCheckpointer::~WalCheckpointer() {
  if (thread_.joinable()) {
    sqlite3_wal_hook(writer_, nullptr, nullptr);
    {
      MutexLock lock(&mu_);
      stopping_ = true;
    }
    cv_.Signal();
    thread_.join();
  }
  if (db_ != nullptr) sqlite3_close(db_);
}

int WalCheckpointer::Hook(void* self, sqlite3* db, const char* /*schema*/, int wal_pages) {
  static_cast<WalCheckpointer*>(self)->OnCommit(db, wal_pages);
  return SQLITE_OK;
}

void WalCheckpointer::OnCommit(sqlite3* db, int wal_pages) {
  const int trigger = options_.trigger_pages;
  if (wal_pages < trigger) {
    // A new WAL (it was restarted): what the thread copied refers to the old one.
    if (copied_.load(std::memory_order_relaxed) != 0) copied_.store(0, std::memory_order_relaxed);
    return;
  }
  const int copied = copied_.load(std::memory_order_relaxed);
  const int tail = std::min(options_.tail_pages, std::max(1, trigger / 4));
  const bool short_tail = copied > 0 && copied <= wal_pages && wal_pages - copied <= tail;
  const bool runaway = wal_pages >= trigger * options_.inline_factor;
  if (short_tail || runaway) {
    if (runaway) {
      // The WAL keeps growing (reads pin old frames, or the thread is starved): copy it now
      // rather than let the file grow without bound.
      spdlog::warn("sqlite: WAL at {} pages; checkpointing in the commit", wal_pages);
    }
    sqlite3_wal_checkpoint_v2(db, nullptr, SQLITE_CHECKPOINT_PASSIVE, nullptr, nullptr);
    inline_.fetch_add(1, std::memory_order_relaxed);
    return;
  }
  {
    MutexLock lock(&mu_);
    if (wanted_) return;
    wanted_ = true;
  }
  cv_.Signal();
}

void WalCheckpointer::Loop() {
  for (;;) {
    {
      MutexLock lock(&mu_);
      while (!stopping_ && !wanted_) cv_.Wait(&mu_);
      if (stopping_) return;
      wanted_ = false;
    }
    int wal_frames = 0;
    int copied = 0;
    int rc =
        sqlite3_wal_checkpoint_v2(db_, nullptr, SQLITE_CHECKPOINT_PASSIVE, &wal_frames, &copied);
    if (rc != SQLITE_OK && rc != SQLITE_BUSY) {
      // Not fatal: the WAL keeps the data; the next commit past the trigger tries again.
      spdlog::warn("sqlite: background checkpoint failed: {}", sqlite3_errmsg(db_));
      continue;
    }
    copied_.store(copied, std::memory_order_relaxed);
    background_.fetch_add(1, std::memory_order_relaxed);
  }
}

}  // namespace engram
