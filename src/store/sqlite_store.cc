#include "store/sqlite_store.h"

#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <cstring>

#include "common/thread_util.h"
#include "store/migrations.h"
#include "store/sqlite_rows.h"
#include "store/sqlite_util.h"

namespace engram {

namespace {

Status OpenConnection(const std::string& path, bool read_only, sqlite3** out) {
  int flags = SQLITE_OPEN_NOMUTEX |
              (read_only ? SQLITE_OPEN_READONLY : (SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE));
  int rc = sqlite3_open_v2(path.c_str(), out, flags, nullptr);
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

SqliteStore::SqliteStore(SqliteStoreOptions options) : options_(std::move(options)) {}

Result<std::unique_ptr<SqliteStore>> SqliteStore::Open(SqliteStoreOptions options) {
  std::unique_ptr<SqliteStore> store(new SqliteStore(std::move(options)));
  Status st = store->Init();
  if (!st.ok()) return st;
  return store;
}

Status SqliteStore::Init() {
  ENGRAM_RETURN_IF_ERROR(OpenConnection(options_.path, /*read_only=*/false, &writer_db_));
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
    ENGRAM_RETURN_IF_ERROR(OpenConnection(options_.path, /*read_only=*/true, &db));
    all_readers_.push_back(db);
    idle_readers_.push_back(db);
  }
  WalCheckpointerOptions ckpt;
  ckpt.path = options_.path;
  ckpt.trigger_pages = std::max(1, options_.wal_checkpoint_pages);
  ckpt.synchronous_full = options_.synchronous_full;
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
    std::lock_guard<std::mutex> lock(queue_mu_);
    stopping_ = true;
  }
  queue_cv_.notify_all();
  if (writer_.joinable()) writer_.join();
  journal_.reset();  // after the writer: a queued write that ends an event releases its record
  checkpointer_.reset();
  for (sqlite3* db : all_readers_) sqlite3_close(db);
  if (writer_db_) {
    // Checkpoint so the next start does not replay a long WAL.
    sqlite3_wal_checkpoint_v2(writer_db_, nullptr, SQLITE_CHECKPOINT_TRUNCATE, nullptr, nullptr);
    sqlite3_close(writer_db_);
  }
}

Status SqliteStore::Submit(WriteFn fn) {
  std::future<Status> done;
  {
    std::lock_guard<std::mutex> lock(queue_mu_);
    if (stopping_) return Status::Unavailable("store is shutting down");
    queue_.push_back(PendingWrite{std::move(fn), {}});
    done = queue_.back().done.get_future();
  }
  queue_cv_.notify_one();
  return done.get();
}

void SqliteStore::WriterLoop() {
  std::vector<PendingWrite> batch;
  std::vector<Status> results;
  for (;;) {
    {
      std::unique_lock<std::mutex> lock(queue_mu_);
      queue_cv_.wait(lock, [this] { return stopping_ || !queue_.empty(); });
      if (queue_.empty() && stopping_) return;
      while (!queue_.empty() && batch.size() < options_.max_batch_writes) {
        batch.push_back(std::move(queue_.front()));
        queue_.pop_front();
      }
    }
    results.assign(batch.size(), Status::Ok());
    const auto began = std::chrono::steady_clock::now();
    Status txn = sqlite::ExecScript(writer_db_, "BEGIN IMMEDIATE");
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
          (void)sqlite::ExecScript(writer_db_, "ROLLBACK TO w");
        }
        (void)sqlite::ExecScript(writer_db_, "RELEASE w");
      }
      txn = sqlite::ExecScript(writer_db_, "COMMIT");
      if (!txn.ok()) (void)sqlite::ExecScript(writer_db_, "ROLLBACK");
    }
    {
      std::lock_guard<std::mutex> lock(queue_mu_);
      last_commit_ = txn;
    }
    if (txn.ok())
      RecordCommit(batch.size(),
                   std::chrono::duration<double>(std::chrono::steady_clock::now() - began).count());
    for (size_t i = 0; i < batch.size(); ++i) {
      batch[i].done.set_value(txn.ok() ? results[i] : txn);
    }
    batch.clear();
  }
}

Result<AddOutcome> SqliteStore::Add(AddBatch batch) {
  AddOutcome outcome;
  Status st = Submit([&batch, &outcome](sqlite3* db) -> Status {
    if (batch.idempotency) {
      sqlite::Stmt q(db,
                     "SELECT body_hash, response FROM idempotency WHERE user_id = ? AND key = ?");
      ENGRAM_RETURN_IF_ERROR(q.prepare_status());
      q.Bind(1, batch.idempotency->user_id);
      q.Bind(2, batch.idempotency->key);
      Status step;
      if (q.Step(&step)) {
        outcome.duplicate = true;
        outcome.existing = {batch.idempotency->key, q.ColumnText(0), q.ColumnText(1),
                            batch.idempotency->user_id};
        return Status::Ok();
      }
      ENGRAM_RETURN_IF_ERROR(step);
    }
    if (!batch.images.empty()) {
      sqlite::Stmt ins(db, "INSERT OR IGNORE INTO images(sha256, mime, bytes) VALUES(?, ?, ?)");
      ENGRAM_RETURN_IF_ERROR(ins.prepare_status());
      for (const auto& img : batch.images) {
        ins.Reset();
        ins.Bind(1, img.sha256);
        ins.Bind(2, img.mime);
        ins.BindBlob(3, img.bytes);
        ENGRAM_RETURN_IF_ERROR(ins.Exec());
      }
    }
    for (auto& m : batch.memories) {
      ENGRAM_RETURN_IF_ERROR(sqlite::InsertMemoryRow(db, "message", m));
    }
    if (batch.idempotency) {
      sqlite::Stmt idem(db,
                        "INSERT INTO idempotency(user_id, key, body_hash, response, created_at) "
                        "VALUES(?, ?, ?, ?, strftime('%s','now'))");
      ENGRAM_RETURN_IF_ERROR(idem.prepare_status());
      idem.Bind(1, batch.idempotency->user_id);
      idem.Bind(2, batch.idempotency->key);
      idem.Bind(3, batch.idempotency->body_hash);
      idem.Bind(4, batch.idempotency->response_json);
      ENGRAM_RETURN_IF_ERROR(idem.Exec());
    }
    outcome.stored = batch.memories;
    return Status::Ok();
  });
  if (!st.ok()) return st;
  return outcome;
}

sqlite3* SqliteStore::AcquireReader() {
  std::unique_lock<std::mutex> lock(readers_mu_);
  readers_cv_.wait(lock, [this] { return !idle_readers_.empty(); });
  sqlite3* db = idle_readers_.back();
  idle_readers_.pop_back();
  return db;
}

void SqliteStore::ReleaseReader(sqlite3* db) {
  {
    std::lock_guard<std::mutex> lock(readers_mu_);
    idle_readers_.push_back(db);
  }
  readers_cv_.notify_one();
}

Result<std::vector<MemoryRecord>> SqliteStore::LoadScope(std::string_view workspace,
                                                         std::string_view user_id) {
  sqlite3* db = AcquireReader();
  std::vector<MemoryRecord> out;
  Status st;
  {
    sqlite::Stmt q(db,
                   fmt::format("SELECT {} FROM memories m LEFT JOIN memory_vectors v "
                               "ON v.memory_seq = m.seq WHERE m.workspace = ? AND m.user_id = ? "
                               "AND m.kind = 'message' "
                               "ORDER BY m.seq",
                               sqlite::kMemoryColumns));
    st = q.prepare_status();
    if (st.ok()) {
      q.Bind(1, workspace);
      q.Bind(2, user_id);
      while (q.Step(&st)) out.push_back(ReadMemoryRow(q));
    }
  }
  ReleaseReader(db);
  if (!st.ok()) return st;
  return out;
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

Result<std::vector<ImageBlob>> SqliteStore::GetImages(const std::vector<std::string>& sha256s) {
  sqlite3* db = AcquireReader();
  std::vector<ImageBlob> out;
  Status st;
  {
    sqlite::Stmt q(db, "SELECT sha256, mime, bytes FROM images WHERE sha256 = ?");
    st = q.prepare_status();
    for (size_t i = 0; st.ok() && i < sha256s.size(); ++i) {
      q.Reset();
      q.Bind(1, sha256s[i]);
      if (q.Step(&st)) out.push_back({q.ColumnText(0), q.ColumnText(1), q.ColumnBlob(2)});
      q.Reset();
    }
  }
  ReleaseReader(db);
  if (!st.ok()) return st;
  return out;
}

Status SqliteStore::CheckWritable() {
  {
    std::lock_guard<std::mutex> lock(queue_mu_);
    if (stopping_) return Status::Unavailable("store is shutting down");
    if (!last_commit_.ok()) return last_commit_;
  }
  if (access(options_.path.c_str(), W_OK) != 0) {
    return Status::Unavailable(fmt::format("database file {} is not writable", options_.path));
  }
  return Status::Ok();
}

void SqliteStore::RecordCommit(size_t writes, double seconds) {
  std::lock_guard<std::mutex> lock(stats_mu_);
  Stats& s = write_stats_;
  ++s.commits;
  s.writes += writes;
  s.commit_seconds += seconds;
  for (size_t i = 0; i < Stats::kCommitBuckets.size(); ++i) {
    if (seconds <= Stats::kCommitBuckets[i]) ++s.commit_le[i];
  }
}

SqliteStore::Stats SqliteStore::GetStats() {
  Stats s;
  {
    std::lock_guard<std::mutex> lock(stats_mu_);
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
