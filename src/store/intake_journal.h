// IntakeJournal: an append-only log that makes accepted work durable with one small fdatasync,
// apart from the database's transactions.
//
// Why: a V4 add is answered once its event is durable. Through the SQLite writer that meant
// waiting for the group transaction in progress (which also carries the events' own results:
// memories, vectors and history rows) and then for its own. Here an accepted record is appended to
// a journal file with every record queued meanwhile, in one write() and one fdatasync() (~0.3 ms
// here), and is then reported durable. The caller of an Append that finds no write in progress
// writes the group itself (leveldb's writer queue: no thread hand-off at low load); records that
// arrive while it writes are written next by the journal's own thread, so that no caller is kept
// for more than one group. The owner stores the record elsewhere afterwards, off the request's
// path, and calls Release once that copy is durable.
//
// Files: <dir>/intake-<n>.log, n increasing. A record is [u32 payload length][u32 CRC-32C of
// length and payload][payload], little-endian. A file closes once past segment_bytes; a closed
// file whose records were all released is deleted. At open, the records of files left by an
// earlier run (a crash, or records never released) are read back in append order, up to the first
// torn or corrupt record of each file (a record is acknowledged only after the fdatasync that
// covers it and every record before it, so nothing past a torn one was acknowledged); the owner
// stores them durably elsewhere and then calls DropLeftovers.
//
// Running out of space (ENOSPC, EDQUOT) is survived: the group that failed is answered with
// kUnavailable (never acknowledged), and so is every Append for a backoff (retry_initial, doubling
// up to retry_max). What reached the disk of that group is unknown, so the journal neither writes
// after it nor syncs that file again: it truncates the file back to its last synced length (so
// that no complete but unacknowledged record can be read back after a crash), closes it, and
// writes the next group into a fresh file. Syncing the same file again would not do: after a
// failed fsync Linux may have dropped the dirty pages and cleared the error, so a second fsync can
// succeed with the data gone. Once the backoff has passed, the journal's thread writes and syncs
// a small probe file; the first Append after that (or after the backoff, if the probe could not
// run yet) writes again. Any other failure (EIO, or a truncate that fails) is fatal: every later
// Append fails with kUnavailable until the process restarts and reads the files back.
//
// Thread-safety: Append and Release may be called from any thread; ReadLeftovers / DropLeftovers
// by the owner before the first Append. `done` callbacks run in append order on the thread that
// wrote their group (an Append's caller, possibly for another caller's record, or the journal's
// thread) and must not block (they may call Append and Release). Append blocks for one group's
// write and fdatasync when its caller writes it.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "common/clock.h"
#include "common/mutex.h"
#include "common/status.h"
#include "store/store_stats.h"

namespace engram {

struct IntakeJournalOptions {
  std::string dir;                         // must exist; holds only this journal's files
  size_t segment_bytes = 4 * 1024 * 1024;  // a file closes past this size
  // Larger appends fail; a larger length read back ends a file's records.
  size_t max_record_bytes = 64 * 1024 * 1024;
  bool sync = true;  // fdatasync each group; false only for benchmarks
  // After running out of space, Appends are refused this long, doubling up to retry_max.
  std::chrono::milliseconds retry_initial{50};
  std::chrono::milliseconds retry_max{2000};
  const Clock* clock = nullptr;  // backoffs and sync timings; null: RealClock()
  // Fault-injection seam for tests: stand-ins for ::write and ::fdatasync on the journal's files
  // (they set errno as the system calls do). Empty: the system calls.
  std::function<ssize_t(int fd, const void* data, size_t size)> write_fn;
  std::function<int(int fd)> fdatasync_fn;
};

class IntakeJournal {
 public:
  // The append's outcome and the record's number (for Release; kNoRecord when refused).
  using Done = std::function<void(Status, uint64_t number)>;
  static constexpr uint64_t kNoRecord = UINT64_MAX;

  // Opens the directory and finds the files of an earlier run (read with ReadLeftovers).
  static Result<std::unique_ptr<IntakeJournal>> Open(IntakeJournalOptions options);
  ~IntakeJournal();
  IntakeJournal(const IntakeJournal&) = delete;
  IntakeJournal& operator=(const IntakeJournal&) = delete;

  // Whether `name` is one of the journal's record files ("intake-<n>.log"): what a backup of the
  // directory copies (the space probe's file is not one).
  static bool IsRecordFile(const std::string& name);

  // The payloads an earlier run appended and did not release, in append order.
  Result<std::vector<std::string>> ReadLeftovers() const;
  // Deletes the earlier run's files: call once their records are stored durably elsewhere.
  Status DropLeftovers();

  // Queues `payload`; once it is written and synced (with whatever else was queued), `done` is
  // called with Ok, or with the error that stopped it. Refused at once (too large, failed,
  // stopped): `done` runs on the caller's thread before Append returns.
  void Append(std::string payload, Done done) EXCLUDES(mu_);
  // Record `number` no longer needs the journal (its copy elsewhere is durable). Also after Stop.
  void Release(uint64_t number) EXCLUDES(mu_);
  // Writes and syncs what is queued, runs those callbacks and joins the thread; later Appends
  // are refused (kUnavailable). The destructor calls it.
  void Stop() EXCLUDES(mu_);

  // OK while Appends are taken; kUnavailable while they are refused (out of space and backing
  // off, failed for good, or stopped). For health checks. Thread-safe.
  Status Health() const EXCLUDES(mu_);

  // Figures for metrics and tests. Thread-safe.
  using Stats = IntakeStats;  // in store_stats.h, so that Store::Stats needs no journal header
  Stats GetStats() const EXCLUDES(mu_);

 private:
  struct Pending {
    std::string payload;
    Done done;
    uint64_t number = 0;
  };
  struct Segment {
    uint64_t file_no = 0;
    uint64_t first = 0;     // number of its first record
    uint64_t appended = 0;  // records written into it
    uint64_t released = 0;
    bool closed = false;
  };

  explicit IntakeJournal(IntakeJournalOptions options);
  // The journal's thread: writes the groups an Append's caller handed over.
  void Loop() EXCLUDES(mu_);
  // The queued records up to kMaxGroupBytes (at least one).
  std::vector<Pending> TakeGroupLocked() REQUIRES(mu_);
  // Writes and syncs the group, then runs its callbacks. Only the leader (see leading_).
  void SyncGroup(std::vector<Pending>& group) EXCLUDES(mu_);
  // Writes and syncs one group into the current file (opening a new one when due). The leader.
  Status WriteGroup(const std::vector<Pending>& group) EXCLUDES(mu_);
  Status OpenSegment() EXCLUDES(mu_);  // a new current file (the leader)
  // After a failed write or sync: cuts the current file back to its synced length and closes it,
  // so the next group goes to a fresh file. The leader.
  Status AbandonSegment() EXCLUDES(mu_);
  // Syncs the file AbandonSegment cut back when that sync failed for lack of space. The leader.
  Status SyncCut();
  // Writes and syncs a small file beside the journal's: is there room again? The leader.
  Status ProbeSpace();
  // The refusal in force (failed for good, or backing off), else OK.
  Status RefusalLocked(Clock::SteadyTime now) const REQUIRES(mu_);
  // The outcome of a write or probe while not failed for good.
  void NoteOutcomeLocked(const Status& st) REQUIRES(mu_);
  ssize_t Write(int fd, const void* data, size_t size) const;
  int DataSync(int fd) const;
  std::string FilePath(uint64_t file_no) const;
  // Deletes closed, fully released segments; returns the paths to unlink.
  std::vector<std::string> TakeDeletableLocked() REQUIRES(mu_);

  const IntakeJournalOptions options_;
  const Clock* const clock_;              // options_.clock, or RealClock()
  std::vector<uint64_t> leftover_files_;  // earlier run's, ascending; owner-only

  mutable Mutex mu_;
  CondVar cv_;
  std::deque<Pending> queue_ GUARDED_BY(mu_);
  uint64_t next_number_ GUARDED_BY(mu_) = 0;
  bool stopping_ GUARDED_BY(mu_) = false;
  bool leading_ GUARDED_BY(mu_) = false;   // a thread is writing groups (one at a time)
  bool hand_off_ GUARDED_BY(mu_) = false;  // the journal's thread is to lead next
  Status failed_ GUARDED_BY(mu_);          // not ok: the journal refuses appends for good
  // Not ok: out of space; Appends are refused until retry_at_, and the state lasts until a write
  // or probe succeeds. backoff_delay_: the current delay (0 when not backing off).
  Status out_of_space_ GUARDED_BY(mu_);
  Clock::SteadyTime retry_at_ GUARDED_BY(mu_){};
  std::chrono::milliseconds backoff_delay_ GUARDED_BY(mu_){0};
  std::deque<Segment> segments_ GUARDED_BY(mu_);  // this run's files, oldest first
  uint64_t next_file_no_ GUARDED_BY(mu_) = 1;
  Stats stats_ GUARDED_BY(mu_);  // live_files computed on read

  int fd_ = -1;          // current file; the leader only
  size_t fd_bytes_ = 0;  // its size; the leader only
  int cut_fd_ = -1;      // a file cut back whose sync failed for lack of space; the leader only
  std::thread thread_;
};

// CRC-32C (Castagnoli) of `data`, continuing from `crc` (0 to start). Exposed for tests.
uint32_t Crc32c(const void* data, size_t size, uint32_t crc = 0);

}  // namespace engram
