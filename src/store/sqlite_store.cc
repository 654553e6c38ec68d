#include "store/sqlite_store.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <spdlog/spdlog.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <filesystem>

#include "common/thread_util.h"
#include "store/census_query.h"
#include "store/message_sql.h"
#include "store/migrations.h"
#include "store/sqlite_rows.h"
#include "store/sqlite_util.h"
#include "store/stored_scopes.h"

namespace engram {

namespace {

// Free space, beyond the WAL's size, that the closing checkpoint needs to run.
constexpr int64_t kCloseCheckpointMargin = 1 << 20;
// Free space a space probe asks for: room for more than the next page.
constexpr size_t kProbeFreeBytes = 256 * 1024;

// The directory of the database file, where its WAL grows and the space probes write.
std::string DirectoryOf(const std::string& path) {
  const std::string dir = std::filesystem::path(path).parent_path().string();
  return dir.empty() ? "." : dir;
}

Status OpenConnection(const std::string& path, bool read_only, const std::string& vfs,
                      sqlite3** out) {
  int flags = SQLITE_OPEN_NOMUTEX |
              (read_only ? SQLITE_OPEN_READONLY : (SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE));
  int rc = sqlite3_open_v2(path.c_str(), out, flags, sqlite::VfsName(vfs));
  if (rc != SQLITE_OK) {
    Status st = sqlite::ErrorStatus(*out, rc, fmt::format("open {}", path));
    sqlite3_close(*out);
    *out = nullptr;
    return st;
  }
  sqlite3_busy_timeout(*out, 5000);
  sqlite3_extended_result_codes(*out, 1);
  return Status::Ok();
}

}  // namespace

SqliteStore::SqliteStore(SqliteStoreOptions options)
    : options_(std::move(options)), clock_(options_.clock ? options_.clock : RealClock()) {}

Result<std::unique_ptr<SqliteStore>> SqliteStore::Open(SqliteStoreOptions options) {
  std::unique_ptr<SqliteStore> store(new SqliteStore(options));
  ENGRAM_RETURN_IF_ERROR(store->Lock());
  if (options.read_only) {
    ENGRAM_RETURN_IF_ERROR(store->InitReadOnly());
    return store;
  }
  Status st = store->Init();
  if (st.ok()) return store;
  // Opening for writing needs space (the WAL index, migrations, the intake journal's leftover
  // events). An existing database on a full disk is opened read-only instead, so reads go on.
  struct stat sb;
  if (::stat(options.path.c_str(), &sb) != 0 ||
      sqlite::ProbeFreeSpace(DirectoryOf(options.path), kProbeFreeBytes).ok()) {
    return st;
  }
  store.reset();  // closes what Init opened
  store.reset(new SqliteStore(std::move(options)));
  ENGRAM_RETURN_IF_ERROR(store->Lock());
  Status ro = store->InitReadOnly();
  if (!ro.ok()) return st;  // the first error says more
  spdlog::warn(
      "sqlite: no free space to open the database for writing ({}); serving reads, "
      "refusing writes until a restart with free space",
      st.message());
  return store;
}

Status SqliteStore::Lock() {
  if (options_.lock_file.empty()) return Status::Ok();
  lock_fd_ = ::open(options_.lock_file.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (lock_fd_ < 0) {
    const int err = errno;
    // A directory where no file can be made (full, read-only) cannot hold the lock; the database
    // is then opened read-only, or not at all, and nothing writes it behind another's back.
    if (err == ENOSPC || err == EDQUOT || err == EROFS || err == EACCES) {
      spdlog::warn("sqlite: no lock file {} ({}); opening without it", options_.lock_file,
                   std::strerror(err));
      return Status::Ok();
    }
    return Status::Internal(
        fmt::format("cannot open lock file {}: {}", options_.lock_file, std::strerror(err)));
  }
  if (::flock(lock_fd_, LOCK_EX | LOCK_NB) != 0) {
    const int err = errno;
    if (err == EWOULDBLOCK) {
      return Status::Unavailable(fmt::format(
          "the data directory is in use by another Engram process (a running server?): {} is "
          "locked",
          options_.lock_file));
    }
    return Status::Internal(
        fmt::format("cannot lock {}: {}", options_.lock_file, std::strerror(err)));
  }
  return Status::Ok();
}

Status SqliteStore::InitReadOnly() {
  read_only_ = Status::Unavailable(
      options_.read_only
          ? "the store was opened for reads only"
          : "the store is read-only: the disk was full at start; restart once space is freed");
  // A WAL-mode database whose WAL and WAL index were removed by a clean close cannot be read
  // through them without creating the index; immutable=1 reads the database file alone, which
  // then holds every commit. With a WAL left behind (a crash, or a stop on a full disk), the
  // index is there and a plain read-only connection reads through it. Beside a running server
  // (read_only) the index exists even when the WAL is empty, and the file must not be read as
  // immutable: the server writes it.
  struct stat sb;
  const bool has_wal = (::stat((options_.path + "-wal").c_str(), &sb) == 0 && sb.st_size > 0) ||
                       (options_.read_only && ::stat((options_.path + "-shm").c_str(), &sb) == 0);
  std::string uri = "file:";
  for (char c : options_.path) {
    if (c == '?' || c == '#' || c == '%') {
      uri += fmt::format("%{:02X}", static_cast<unsigned char>(c));
    } else {
      uri += c;
    }
  }
  const std::string path = has_wal ? options_.path : uri + "?immutable=1";
  for (int i = 0; i < std::max(1, options_.read_connections); ++i) {
    sqlite3* db = nullptr;
    int rc = sqlite3_open_v2(path.c_str(), &db,
                             SQLITE_OPEN_READONLY | SQLITE_OPEN_NOMUTEX | SQLITE_OPEN_URI,
                             sqlite::VfsName(options_.vfs));
    if (rc != SQLITE_OK) {
      Status st = sqlite::ErrorStatus(db, rc, "open read-only");
      sqlite3_close(db);
      return st;
    }
    sqlite3_busy_timeout(db, 5000);
    sqlite3_extended_result_codes(db, 1);
    all_readers_.push_back(db);
    MutexLock lock(&readers_mu_);  // uncontended: no reader runs yet
    idle_readers_.push_back(db);
  }
  // The schema must be current: migrations cannot run without space.
  sqlite::Stmt q(all_readers_.front(), "PRAGMA user_version");
  ENGRAM_RETURN_IF_ERROR(q.prepare_status());
  Status st;
  schema_version_ = q.Step(&st) ? static_cast<int>(q.ColumnInt(0)) : 0;
  ENGRAM_RETURN_IF_ERROR(st);
  const auto& migrations = SqliteMigrations();
  if (migrations.empty() || schema_version_ != migrations.back().version) {
    return Status::Unavailable(
        options_.read_only
            ? fmt::format("database schema v{} is not this Engram's (v{}): serve it once first",
                          schema_version_, migrations.empty() ? 0 : migrations.back().version)
            : std::string("database schema needs migrating, which needs free space"));
  }
  if (!options_.intake_journal_dir.empty()) ShowIntakeJournal();
  return Status::Ok();
}

Status SqliteStore::Init() {
  ENGRAM_RETURN_IF_ERROR(
      OpenConnection(options_.path, /*read_only=*/false, options_.vfs, &writer_db_));
  ENGRAM_RETURN_IF_ERROR(sqlite::ExecScript(writer_db_, "PRAGMA journal_mode=WAL;"));
  ENGRAM_RETURN_IF_ERROR(sqlite::ExecScript(writer_db_, options_.synchronous_full
                                                            ? "PRAGMA synchronous=FULL;"
                                                            : "PRAGMA synchronous=OFF;"));
  ENGRAM_RETURN_IF_ERROR(sqlite::ExecScript(writer_db_, "PRAGMA foreign_keys=ON;"));
  // Deleted rows and freed pages are overwritten with zeros, so a deleted user's text leaves the
  // file (sqlite_lifecycle.cc truncates the WAL's old copies). ON, not FAST: FAST leaves freed
  // pages as they were.
  ENGRAM_RETURN_IF_ERROR(sqlite::ExecScript(writer_db_, "PRAGMA secure_delete=ON;"));
  // A WAL that grew while the checkpoint thread was behind is cut back to twice the checkpoint
  // trigger when SQLite restarts it, instead of keeping its largest size on disk.
  const int64_t wal_limit = 2 * int64_t{4096} * std::max(1, options_.wal_checkpoint_pages);
  ENGRAM_RETURN_IF_ERROR(sqlite::ExecScript(
      writer_db_, fmt::format("PRAGMA journal_size_limit={};", wal_limit).c_str()));
  auto version = ApplyMigrations(writer_db_, SqliteMigrations());
  if (!version.ok()) return version.status();
  schema_version_ = *version;

  for (int i = 0; i < std::max(1, options_.read_connections); ++i) {
    sqlite3* db = nullptr;
    ENGRAM_RETURN_IF_ERROR(OpenConnection(options_.path, /*read_only=*/true, options_.vfs, &db));
    all_readers_.push_back(db);
    MutexLock lock(&readers_mu_);  // uncontended: no reader runs yet
    idle_readers_.push_back(db);
  }
  WalCheckpointerOptions ckpt;
  ckpt.path = options_.path;
  ckpt.trigger_pages = std::max(1, options_.wal_checkpoint_pages);
  ckpt.synchronous_full = options_.synchronous_full;
  ckpt.vfs = options_.vfs;
  auto checkpointer = WalCheckpointer::Start(std::move(ckpt), writer_db_);
  if (!checkpointer.ok()) return checkpointer.status();
  checkpointer_ = std::move(*checkpointer);
  writer_ = std::thread([this] {
    NameThisThread("sqlite-writer");
    WriterLoop();
  });
  if (!options_.intake_journal_dir.empty()) ENGRAM_RETURN_IF_ERROR(OpenIntakeJournal());
  return Status::Ok();
}

SqliteStore::~SqliteStore() {
  // No more appends (the HTTP server and the event workers have stopped before the store).
  if (journal_) journal_->Stop();
  {
    MutexLock lock(&queue_mu_);
    stopping_ = true;
  }
  queue_cv_.SignalAll();
  if (writer_.joinable()) writer_.join();
  journal_.reset();  // after the writer: a queued write that ends an event releases its record
  checkpointer_.reset();
  for (sqlite3* db : all_readers_) sqlite3_close(db);
  if (writer_db_) {
    // Checkpoint so the next start does not replay a long WAL. A checkpoint copies WAL pages into
    // the database file, which may grow it: on a nearly full disk that could take the last space
    // and leave the next start none. It is skipped then, and so is the one SQLite runs when the
    // last connection closes; the WAL and its index stay on disk, already allocated, and the next
    // open reads them. A checkpoint that fails anyway leaves the WAL to be replayed: no harm.
    struct stat sb;
    const int64_t wal_bytes =
        ::stat((options_.path + "-wal").c_str(), &sb) == 0 ? static_cast<int64_t>(sb.st_size) : 0;
    const int64_t free_bytes = sqlite::FreeBytes(DirectoryOf(options_.path));
    if (free_bytes >= 0 && free_bytes < wal_bytes + kCloseCheckpointMargin) {
      spdlog::warn("sqlite: {} bytes free; keeping the WAL ({} bytes) instead of checkpointing",
                   free_bytes, wal_bytes);
      sqlite3_db_config(writer_db_, SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE, 1, nullptr);
    } else {
      sqlite3_wal_checkpoint_v2(writer_db_, nullptr, SQLITE_CHECKPOINT_TRUNCATE, nullptr, nullptr);
    }
    sqlite3_close(writer_db_);
  }
  if (lock_fd_ >= 0) ::close(lock_fd_);  // releases the lock
}

Status SqliteStore::Submit(WriteFn fn) {
  if (!read_only_.ok()) return read_only_;
  std::future<Status> done;
  {
    MutexLock lock(&queue_mu_);
    if (stopping_) return Status::Unavailable("store is shutting down");
    queue_.push_back(PendingWrite{std::move(fn), {}});
    done = queue_.back().done.get_future();
  }
  queue_cv_.Signal();
  return done.get();
}

void SqliteStore::WriterLoop() {
  std::vector<PendingWrite> batch;
  std::vector<Status> results;
  for (;;) {
    {
      MutexLock lock(&queue_mu_);
      while (!stopping_ && queue_.empty()) queue_cv_.Wait(&queue_mu_);
      if (queue_.empty() && stopping_) return;
      while (!queue_.empty() && batch.size() < options_.max_batch_writes) {
        batch.push_back(std::move(queue_.front()));
        queue_.pop_front();
      }
    }
    results.assign(batch.size(), Status::Ok());
    const auto began = clock_->SteadyNow();
    Status txn = sqlite::ExecScript(writer_db_, "BEGIN IMMEDIATE");
    bool out_of_space = false;
    if (txn.ok()) {
      for (size_t i = 0; i < batch.size(); ++i) {
        // A savepoint per write: a failing write is rolled back alone.
        Status sp = sqlite::ExecScript(writer_db_, "SAVEPOINT w");
        if (!sp.ok()) {
          results[i] = sp;
          continue;
        }
        results[i] = batch[i].fn(writer_db_);
        if (!results[i].ok()) {
          out_of_space |= sqlite::LastErrorIsFull(writer_db_);
          (void)sqlite::ExecScript(writer_db_, "ROLLBACK TO w");
        }
        (void)sqlite::ExecScript(writer_db_, "RELEASE w");
        // After some errors (SQLITE_FULL, I/O errors) SQLite rolls the whole transaction back
        // itself: the writes before this one are gone too, and later ones would run outside any
        // transaction. The whole group fails then; nothing of it is reported committed.
        if (sqlite3_get_autocommit(writer_db_) != 0) {
          txn = results[i].ok() ? Status::Unavailable("store: the transaction was rolled back")
                                : results[i];
          break;
        }
      }
      if (txn.ok()) {
        txn = sqlite::ExecScript(writer_db_, "COMMIT");
        if (!txn.ok()) out_of_space |= sqlite::LastErrorIsFull(writer_db_);
      }
      if (!txn.ok() && sqlite3_get_autocommit(writer_db_) == 0) {
        (void)sqlite::ExecScript(writer_db_, "ROLLBACK");
      }
    }
    {
      MutexLock lock(&queue_mu_);
      // A write that failed for lack of space makes the store unhealthy even when the rest of
      // its group committed; the next clean group (or CheckWritable's probe) clears it.
      const bool was_failing = !last_commit_.ok();
      if (txn.ok() && out_of_space) {
        last_commit_ = Status::Unavailable("store: out of disk space");
      } else {
        last_commit_ = txn;
      }
      if (!last_commit_.ok() && (!was_failing || out_of_space != out_of_space_)) {
        if (out_of_space) {
          spdlog::warn("sqlite: out of disk space; writes answer 503 until space is freed");
        } else {
          spdlog::warn("sqlite: a commit failed ({}); writes answer 503 until one succeeds",
                       last_commit_.message());
        }
        probe_at_ = clock_->SteadyNow() + probe_delay_;
      }
      if (last_commit_.ok() && was_failing) {
        spdlog::info("sqlite: committing again");
        probe_delay_ = std::chrono::milliseconds(50);
      }
      out_of_space_ = out_of_space;
    }
    if (txn.ok())
      RecordCommit(batch.size(),
                   std::chrono::duration<double>(clock_->SteadyNow() - began).count());
    for (size_t i = 0; i < batch.size(); ++i) {
      batch[i].done.set_value(txn.ok() ? results[i] : txn);
    }
    batch.clear();
  }
}

Result<AddOutcome> SqliteStore::Add(AddBatch batch) {
  AddOutcome outcome;
  Status st = Submit([this, &batch, &outcome](sqlite3* db) -> Status {
    sqlite::SqliteTxn txn(db);
    message_sql::AddHooks hooks;
    hooks.insert_row = [db](MemoryRecord& m) { return sqlite::InsertMemoryRow(db, "message", m); };
    // Seconds, as the expiry compares them.
    Result<AddOutcome> added = message_sql::Add(txn, batch, clock_->WallMicros() / 1000000, hooks);
    if (!added.ok()) return added.status();
    outcome = std::move(*added);
    return Status::Ok();
  });
  if (!st.ok()) return st;
  return outcome;
}

sqlite3* SqliteStore::AcquireReader() {
  MutexLock lock(&readers_mu_);
  while (idle_readers_.empty()) readers_cv_.Wait(&readers_mu_);
  sqlite3* db = idle_readers_.back();
  idle_readers_.pop_back();
  return db;
}

void SqliteStore::ReleaseReader(sqlite3* db) {
  {
    MutexLock lock(&readers_mu_);
    idle_readers_.push_back(db);
  }
  readers_cv_.Signal();
}

Result<std::vector<MemoryRecord>> SqliteStore::LoadScope(std::string_view workspace,
                                                         std::string_view user_id) {
  return Read([&](SqlTxn& txn) {
    return memory_sql::LoadMemories(txn, sqlite::kMemories, memory_sql::kMessagesOfUser,
                                    {workspace, user_id});
  });
}

Status SqliteStore::PutVectors(const std::vector<VectorUpdate>& updates) {
  if (updates.empty()) return Status::Ok();
  return Submit([&updates](sqlite3* db) -> Status {
    sqlite::Stmt exists(db, "SELECT 1 FROM memories WHERE seq = ?");
    ENGRAM_RETURN_IF_ERROR(exists.prepare_status());
    for (const auto& u : updates) {
      exists.Reset();
      exists.Bind(1, u.seq);
      Status st;
      bool found = exists.Step(&st);
      ENGRAM_RETURN_IF_ERROR(st);
      exists.Reset();
      if (!found) continue;
      ENGRAM_RETURN_IF_ERROR(sqlite::InsertVector(db, u.seq, u.model, u.vector));
    }
    return Status::Ok();
  });
}

Result<std::optional<IdempotencyRecord>> SqliteStore::FindIdempotency(std::string_view user_id,
                                                                      std::string_view key) {
  return Read([&](SqlTxn& txn) { return message_sql::FindIdempotency(txn, user_id, key); });
}

Result<std::vector<ImageBlob>> SqliteStore::GetImages(const std::vector<std::string>& sha256s) {
  return Read([&](SqlTxn& txn) { return message_sql::GetImages(txn, sha256s); });
}

Status SqliteStore::CheckWritable() {
  if (!read_only_.ok()) return read_only_;
  // The V4 adds' write path: refusing while out of space or failed.
  if (journal_) ENGRAM_RETURN_IF_ERROR(journal_->Health());
  bool probe = false;
  bool probe_space = false;
  {
    MutexLock lock(&queue_mu_);
    if (stopping_) return Status::Unavailable("store is shutting down");
    if (!last_commit_.ok()) {
      const auto now = clock_->SteadyNow();
      if (probing_ || now < probe_at_) return last_commit_;
      // No write has committed since the failure: can one now? One caller probes at a time.
      probe_delay_ = std::min(2 * probe_delay_, std::chrono::milliseconds(2000));
      probe_at_ = now + probe_delay_;
      probe = true;
      probing_ = true;
      probe_space = out_of_space_;
    }
  }
  if (probe) {
    // The writer tries every write anyway; the probe only lets health say so before one comes.
    // Out of space, room for more than one page comes first, so that health does not flap
    // between a page that fits and the next write that does not.
    Status probed = Status::Ok();
    if (probe_space) {
      probed = sqlite::ProbeFreeSpace(DirectoryOf(options_.path), kProbeFreeBytes);
    }
    if (probed.ok()) {
      // A commit of the schema version (unchanged) writes and syncs a page through the same path
      // as any write; once it commits, the writer clears last_commit_ as after any clean group.
      const std::string rewrite = fmt::format("PRAGMA user_version = {}", schema_version_);
      probed = Submit([rewrite](sqlite3* db) { return sqlite::ExecScript(db, rewrite.c_str()); });
    }
    MutexLock lock(&queue_mu_);
    probing_ = false;
    // The probe shares its group with other writes: one of them may have failed for space in a
    // group that committed, which leaves last_commit_ failed.
    if (!probed.ok() || !last_commit_.ok()) return last_commit_.ok() ? probed : last_commit_;
  }
  if (access(options_.path.c_str(), W_OK) != 0) {
    return Status::Unavailable(fmt::format("database file {} is not writable", options_.path));
  }
  return Status::Ok();
}

void SqliteStore::RecordCommit(size_t writes, double seconds) {
  MutexLock lock(&stats_mu_);
  Stats& s = write_stats_;
  ++s.commits;
  s.writes += writes;
  s.commit_seconds += seconds;
  for (size_t i = 0; i < Stats::kCommitBuckets.size(); ++i) {
    if (seconds <= Stats::kCommitBuckets[i]) ++s.commit_le[i];
  }
}

Result<StoredScopes> SqliteStore::ListStoredScopes() {
  return Read([](SqlTxn& txn) { return stored_scopes::List(txn); });
}

Result<std::vector<WorkspaceCounts>> SqliteStore::CountWorkspaces() {
  return WithReader([&](sqlite3* db) -> Result<std::vector<WorkspaceCounts>> {
    sqlite::SqliteTxn txn(db);
    Result<census_query::Tally> tally = census_query::Count(txn);
    if (!tally.ok()) return tally.status();
    // Events accepted through the intake journal have no row until they end: each counts once,
    // as unfinished.
    auto accepted = AcceptedWithoutRow(db, std::nullopt);
    if (!accepted.ok()) return accepted.status();
    for (const MemoryEventRecord& e : *accepted)
      census_query::AddAcceptedEvent(e.workspace, &*tally);
    return census_query::Finish(std::move(*tally));
  });
}

SqliteStore::Stats SqliteStore::GetStats() {
  Stats s;
  {
    MutexLock lock(&stats_mu_);
    s = write_stats_;
  }
  s.group_commit = true;
  if (checkpointer_) {
    s.checkpoints_background = checkpointer_->background_checkpoints();
    s.checkpoints_in_commit = checkpointer_->inline_checkpoints();
  }
  if (journal_) s.intake = journal_->GetStats();
  sqlite3* db = AcquireReader();
  {
    sqlite::Stmt q(db, "SELECT count(*) FROM memories");
    Status st;
    if (q.valid() && q.Step(&st)) s.memories = q.ColumnInt(0);
  }
  ReleaseReader(db);
  struct stat sb;
  if (stat(options_.path.c_str(), &sb) == 0) s.bytes_on_disk = sb.st_size;
  std::string wal = options_.path + "-wal";
  if (stat(wal.c_str(), &sb) == 0) s.bytes_on_disk += sb.st_size;
  return s;
}

}  // namespace engram
