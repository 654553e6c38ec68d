#include "store/sqlite_backup.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <sqlite3.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <functional>
#include <nlohmann/json.hpp>
#include <thread>

#include "common/codec.h"
#include "common/errno_status.h"
#include "common/json_reader.h"
#include "common/posix_file.h"
#include "common/time_util.h"
#include "store/intake_journal.h"
#include "store/sqlite_data_dir.h"
#include "store/sqlite_util.h"

namespace engram {
namespace {

namespace fs = std::filesystem;

using sqlite_data_dir::kDatabase;
using sqlite_data_dir::kIntake;
constexpr const char* kManifest = "manifest.json";
constexpr const char* kFormatName = "engram-backup";
constexpr size_t kBlockBytes = 1 << 20;
constexpr size_t kMaxManifestBytes = 64u << 20;

// NotFound for a file that is gone (a journal file released meanwhile), else as ErrnoStatus.
Status FileError(const std::string& what, const fs::path& path, int err) {
  const std::string subject = what + " " + path.string();
  if (err == ENOENT) return Status::NotFound(subject + ": " + std::strerror(err));
  return ErrnoStatus(subject, err);
}

Status WriteAll(int fd, const char* data, size_t size, const fs::path& path) {
  while (size > 0) {
    const ssize_t n = ::write(fd, data, size);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return FileError("cannot write", path, errno);
    data += n;
    size -= static_cast<size_t>(n);
  }
  return Status::Ok();
}

// Reads the open file `fd` (named `path` in messages) to its end, handing each block to `each`;
// stops at the first error, its own or `each`'s.
Status ReadBlocks(int fd, const fs::path& path, size_t block_bytes,
                  const std::function<Status(std::string_view)>& each) {
  std::string block(block_bytes, '\0');
  for (;;) {
    const ssize_t n = ::read(fd, block.data(), block.size());
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return FileError("cannot read", path, errno);
    if (n == 0) return Status::Ok();
    ENGRAM_RETURN_IF_ERROR(each(std::string_view(block.data(), static_cast<size_t>(n))));
  }
}

// Copies `from` to a new file `to` (synced), measuring what it copied. NotFound when `from` is
// gone (a journal file released meanwhile); `to` is created only once `from` is open.
Result<BackupFile> CopyFile(const fs::path& from, const fs::path& to, const std::string& name) {
  UniqueFd in(::open(from.c_str(), O_RDONLY | O_CLOEXEC));
  if (!in.valid()) return FileError("cannot open", from, errno);
  UniqueFd out(::open(to.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600));
  if (!out.valid()) return FileError("cannot create", to, errno);
  BackupFile file{.path = name};
  Sha256 sha;
  ENGRAM_RETURN_IF_ERROR(ReadBlocks(in.get(), from, kBlockBytes, [&](std::string_view block) {
    ENGRAM_RETURN_IF_ERROR(WriteAll(out.get(), block.data(), block.size(), to));
    sha.Update(block);
    file.bytes += block.size();
    return Status::Ok();
  }));
  if (::fsync(out.get()) != 0) return FileError("cannot sync", to, errno);
  if (out.Close() != 0) return FileError("cannot close", to, errno);
  file.sha256 = sha.HexDigest();
  return file;
}

Result<BackupFile> MeasureFile(const fs::path& path, const std::string& name) {
  UniqueFd in(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (!in.valid()) return FileError("cannot open", path, errno);
  BackupFile file{.path = name};
  Sha256 sha;
  ENGRAM_RETURN_IF_ERROR(ReadBlocks(in.get(), path, kBlockBytes, [&](std::string_view block) {
    sha.Update(block);
    file.bytes += block.size();
    return Status::Ok();
  }));
  file.sha256 = sha.HexDigest();
  return file;
}

Status WriteFileSynced(const fs::path& path, std::string_view text) {
  UniqueFd out(::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600));
  if (!out.valid()) return FileError("cannot create", path, errno);
  ENGRAM_RETURN_IF_ERROR(WriteAll(out.get(), text.data(), text.size(), path));
  if (::fsync(out.get()) != 0) return FileError("cannot sync", path, errno);
  if (out.Close() != 0) return FileError("cannot close", path, errno);
  return Status::Ok();
}

Result<std::string> ReadSmallFile(const fs::path& path, size_t max_bytes) {
  UniqueFd in(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (!in.valid()) return FileError("cannot open", path, errno);
  std::string text;
  ENGRAM_RETURN_IF_ERROR(ReadBlocks(in.get(), path, 64 * 1024, [&](std::string_view block) {
    text.append(block);
    if (text.size() <= max_bytes) return Status::Ok();
    return Status::InvalidParameter(
        fmt::format("{} is larger than {} bytes", path.string(), max_bytes));
  }));
  return text;
}

// "engram.db" or "intake/<record file>": nothing that could name a file outside the backup.
bool IsBackupPath(const std::string& path) {
  if (path == kDatabase) return true;
  const std::string prefix = std::string(kIntake) + "/";
  return path.size() > prefix.size() && path.compare(0, prefix.size(), prefix) == 0 &&
         IntakeJournal::IsRecordFile(path.substr(prefix.size()));
}

bool IsHexDigest(const std::string& s) {
  return s.size() == 64 && std::all_of(s.begin(), s.end(), [](char c) {
           return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f');
         });
}

// True when `dir` is missing or an empty directory.
Result<bool> IsMissingOrEmpty(const fs::path& dir) {
  std::error_code ec;
  const fs::file_status st = fs::status(dir, ec);
  if (ec && ec != std::errc::no_such_file_or_directory) {
    return Status::Internal(fmt::format("cannot inspect {}: {}", dir.string(), ec.message()));
  }
  if (!fs::exists(st)) return true;
  if (!fs::is_directory(st)) return false;
  const bool empty = fs::is_empty(dir, ec);
  if (ec) return Status::Internal(fmt::format("cannot list {}: {}", dir.string(), ec.message()));
  return empty;
}

// Closes the connection on every path out.
struct DbCloser {
  sqlite3* db = nullptr;
  ~DbCloser() {
    if (db) sqlite3_close_v2(db);
  }
};

// Copies the live database at `from` into a new database `to`, in one step: one read transaction
// on the source, so one point in time. Then checks the copy and measures it into `manifest`.
Status CopyDatabase(const fs::path& from, const fs::path& to, const std::string& vfs,
                    BackupManifest* manifest) {
  DbCloser src, dst;
  // Read-write without create: a read-only connection cannot make the WAL index (-shm) when the
  // server is stopped; nothing is written through it (query_only).
  int rc = sqlite3_open_v2(from.c_str(), &src.db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOMUTEX,
                           sqlite::VfsName(vfs));
  if (rc != SQLITE_OK) return sqlite::ErrorStatus(src.db, rc, "open " + from.string());
  sqlite3_busy_timeout(src.db, 10000);
  ENGRAM_RETURN_IF_ERROR(sqlite::ExecScript(src.db, "PRAGMA query_only=ON;"));
  rc = sqlite3_open_v2(to.c_str(), &dst.db,
                       SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX,
                       sqlite::VfsName(vfs));
  if (rc != SQLITE_OK) return sqlite::ErrorStatus(dst.db, rc, "create " + to.string());

  sqlite3_backup* backup = sqlite3_backup_init(dst.db, "main", src.db, "main");
  if (!backup) return sqlite::ErrorStatus(dst.db, sqlite3_errcode(dst.db), "start the backup");
  // -1: every page in one step, under one read transaction. BUSY only while the server holds an
  // exclusive lock (opening, or a truncating checkpoint): retry for a while.
  for (int attempt = 0;; ++attempt) {
    rc = sqlite3_backup_step(backup, -1);
    if ((rc == SQLITE_BUSY || rc == SQLITE_LOCKED) && attempt < 200) {
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
      continue;
    }
    break;
  }
  const int finish_rc = sqlite3_backup_finish(backup);
  if (rc != SQLITE_DONE) return sqlite::ErrorStatus(dst.db, rc, "copy the database");
  if (finish_rc != SQLITE_OK) return sqlite::ErrorStatus(dst.db, finish_rc, "finish the backup");

  // One file, no WAL beside it: a backup is copied around as files.
  ENGRAM_RETURN_IF_ERROR(sqlite::ExecScript(dst.db, "PRAGMA journal_mode=DELETE;"));
  {
    sqlite::Stmt check(dst.db, "PRAGMA quick_check");
    Status st;
    if (!check.Step(&st)) return st.ok() ? Status::Internal("quick_check returned nothing") : st;
    const std::string verdict = check.ColumnText(0);
    if (verdict != "ok") {
      return Status::Internal("the copied database fails SQLite's quick_check: " + verdict);
    }
  }
  {
    sqlite::Stmt version(dst.db, "PRAGMA user_version");
    Status st;
    if (!version.Step(&st)) return st.ok() ? Status::Internal("no user_version") : st;
    manifest->schema_version = static_cast<int>(version.ColumnInt(0));
  }
  std::vector<std::string> tables;
  {
    sqlite::Stmt list(dst.db,
                      "SELECT name FROM sqlite_schema WHERE type = 'table' AND name NOT LIKE "
                      "'sqlite\\_%' ESCAPE '\\' ORDER BY name");
    Status st;
    while (list.Step(&st)) tables.push_back(list.ColumnText(0));
    ENGRAM_RETURN_IF_ERROR(st);
  }
  for (const std::string& table : tables) {
    std::string quoted = "\"";
    for (char c : table) quoted += c == '"' ? std::string("\"\"") : std::string(1, c);
    quoted += "\"";
    sqlite::Stmt count(dst.db, "SELECT count(*) FROM " + quoted);
    Status st;
    if (!count.Step(&st)) return st.ok() ? Status::Internal("count returned nothing") : st;
    manifest->rows[table] = count.ColumnInt(0);
  }
  rc = sqlite3_close_v2(dst.db);
  dst.db = nullptr;
  if (rc != SQLITE_OK) return Status::Internal(fmt::format("closing {}: {}", to.string(), rc));
  return SyncPath(to);
}

}  // namespace

std::string BackupManifest::ToJson() const {
  nlohmann::ordered_json j;
  j["format"] = kFormatName;
  j["format_version"] = format_version;
  j["engram_version"] = engram_version;
  j["created_at"] = created_at;
  j["store"] = "sqlite";
  j["schema_version"] = schema_version;
  nlohmann::ordered_json files = nlohmann::ordered_json::array();
  for (const BackupFile& f : this->files) {
    files.push_back({{"path", f.path}, {"bytes", f.bytes}, {"sha256", f.sha256}});
  }
  j["files"] = std::move(files);
  nlohmann::ordered_json counts = nlohmann::ordered_json::object();
  for (const auto& [table, n] : rows) counts[table] = n;
  j["rows"] = std::move(counts);
  return j.dump(2) + "\n";
}

Result<BackupManifest> BackupManifest::Parse(std::string_view text) {
  auto parsed =
      ReadJson(text, {.what = "manifest.json", .max_bytes = kMaxManifestBytes, .max_depth = 8});
  if (!parsed.ok()) return parsed.status();
  const nlohmann::json& j = *parsed;
  auto bad = [](const std::string& what) {
    return Status::InvalidParameter("manifest.json: " + what);
  };
  if (!j.is_object()) return bad("not an object");
  if (j.value("format", "") != kFormatName) return bad("format is not \"engram-backup\"");
  if (!j.contains("format_version") || !j["format_version"].is_number_integer()) {
    return bad("format_version is missing");
  }
  BackupManifest m;
  m.format_version = j["format_version"].get<int>();
  if (m.format_version != kFormatVersion) {
    return bad(fmt::format("format_version {} is not {} (a newer Engram wrote it)",
                           m.format_version, kFormatVersion));
  }
  if (j.value("store", "") != "sqlite") return bad("store is not \"sqlite\"");
  if (!j.contains("schema_version") || !j["schema_version"].is_number_integer() ||
      j["schema_version"].get<int64_t>() < 0 || j["schema_version"].get<int64_t>() > INT32_MAX) {
    return bad("schema_version is missing or out of range");
  }
  m.schema_version = j["schema_version"].get<int>();
  if (j.contains("engram_version") && j["engram_version"].is_string()) {
    m.engram_version = j["engram_version"].get<std::string>();
  }
  if (j.contains("created_at") && j["created_at"].is_string()) {
    m.created_at = j["created_at"].get<std::string>();
  }
  if (!j.contains("files") || !j["files"].is_array()) return bad("files is missing");
  bool has_database = false;
  for (const nlohmann::json& f : j["files"]) {
    if (!f.is_object() || !f.contains("path") || !f["path"].is_string() || !f.contains("bytes") ||
        !f["bytes"].is_number_unsigned() || !f.contains("sha256") || !f["sha256"].is_string()) {
      return bad("a files entry lacks path, bytes or sha256");
    }
    BackupFile file{.path = f["path"].get<std::string>(),
                    .bytes = f["bytes"].get<uint64_t>(),
                    .sha256 = f["sha256"].get<std::string>()};
    if (!IsBackupPath(file.path)) return bad("files names an unexpected path");
    if (!IsHexDigest(file.sha256)) return bad("a sha256 is not 64 lower-case hex digits");
    for (const BackupFile& seen : m.files) {
      if (seen.path == file.path) return bad("files names a path twice");
    }
    has_database = has_database || file.path == kDatabase;
    m.files.push_back(std::move(file));
  }
  if (!has_database) return bad("files lacks engram.db");
  if (j.contains("rows") && j["rows"].is_object()) {
    for (const auto& [table, n] : j["rows"].items()) {
      if (n.is_number_integer()) m.rows[table] = n.get<int64_t>();
    }
  }
  return m;
}

Result<BackupManifest> BackupSqliteDataDir(const SqliteBackupOptions& options) {
  const fs::path data(options.data_dir);
  const fs::path database = data / kDatabase;
  std::error_code ec;
  if (!fs::is_regular_file(database, ec)) {
    return Status::NotFound(fmt::format("no database at {}", database.string()));
  }
  fs::path dest = fs::absolute(options.dest, ec);
  if (ec) return Status::InvalidParameter(fmt::format("bad destination {}", options.dest));
  dest = dest.lexically_normal();
  if (dest.filename().empty()) dest = dest.parent_path();  // "dir/" names "dir"
  auto free_dest = IsMissingOrEmpty(dest);
  if (!free_dest.ok()) return free_dest.status();
  if (!*free_dest) {
    return Status::InvalidParameter(
        fmt::format("destination {} exists and is not an empty directory", dest.string()));
  }
  const fs::path staging =
      dest.parent_path() / fmt::format(".{}.partial-{}", dest.filename().string(), ::getpid());
  fs::remove_all(staging, ec);
  fs::create_directories(staging / kIntake, ec);
  if (ec) {
    return Status::Unavailable(fmt::format("cannot create {}: {}", staging.string(), ec.message()));
  }
  // Whatever fails from here leaves no partial backup behind.
  struct Cleanup {
    fs::path path;
    bool keep = false;
    ~Cleanup() {
      std::error_code ignored;
      if (!keep) fs::remove_all(path, ignored);
    }
  } cleanup{staging};

  BackupManifest manifest;
  manifest.engram_version = options.engram_version;
  manifest.created_at = FormatIsoMicros(NowMicros());

  // The journal first, then the database (see the header).
  std::vector<std::string> journal;
  if (fs::is_directory(data / kIntake, ec)) {
    for (const fs::directory_entry& entry : fs::directory_iterator(data / kIntake, ec)) {
      const std::string name = entry.path().filename().string();
      if (IntakeJournal::IsRecordFile(name)) journal.push_back(name);
    }
    if (ec)
      return Status::Internal(
          fmt::format("cannot list {}: {}", (data / kIntake).string(), ec.message()));
  }
  std::sort(journal.begin(), journal.end());
  for (const std::string& name : journal) {
    auto copied = CopyFile(data / kIntake / name, staging / kIntake / name,
                           std::string(kIntake) + "/" + name);
    // Released and deleted since the listing: its records are in the database already.
    if (copied.status().code() == StatusCode::kNotFound) continue;
    if (!copied.ok()) return copied.status();
    manifest.files.push_back(std::move(*copied));
  }
  ENGRAM_RETURN_IF_ERROR(CopyDatabase(database, staging / kDatabase, options.vfs, &manifest));
  auto measured = MeasureFile(staging / kDatabase, kDatabase);
  if (!measured.ok()) return measured.status();
  manifest.files.insert(manifest.files.begin(), std::move(*measured));

  ENGRAM_RETURN_IF_ERROR(WriteFileSynced(staging / kManifest, manifest.ToJson()));
  ENGRAM_RETURN_IF_ERROR(SyncPath(staging / kIntake));
  ENGRAM_RETURN_IF_ERROR(SyncPath(staging));
  if (fs::exists(dest, ec)) fs::remove(dest, ec);  // the empty directory it may be
  if (::rename(staging.c_str(), dest.c_str()) != 0) {
    return FileError("cannot rename the backup to", dest, errno);
  }
  cleanup.keep = true;
  ENGRAM_RETURN_IF_ERROR(SyncPath(dest.parent_path()));
  return manifest;
}

Result<BackupManifest> VerifyBackup(const std::string& dir) {
  const fs::path root(dir);
  auto text = ReadSmallFile(root / kManifest, kMaxManifestBytes);
  if (!text.ok()) return text.status();
  auto manifest = BackupManifest::Parse(*text);
  if (!manifest.ok()) return manifest.status();
  for (const BackupFile& file : manifest->files) {
    auto found = MeasureFile(root / file.path, file.path);
    if (!found.ok()) return found.status();
    if (found->bytes != file.bytes || found->sha256 != file.sha256) {
      return Status::InvalidParameter(fmt::format(
          "{} does not match the manifest (size or SHA-256): the backup is damaged", file.path));
    }
  }
  return manifest;
}

namespace {

// Copies the backup's files into the empty data directory under staging names and renames them
// into place, the intake journal first: a data directory with engram.db is a whole one.
Status PlaceBackupFiles(const BackupManifest& manifest, const fs::path& source,
                        const fs::path& data, const fs::path& intake_staging,
                        const fs::path& database_staging) {
  std::error_code ec;
  fs::create_directories(intake_staging, ec);
  if (ec) {
    return Status::Unavailable(
        fmt::format("cannot create {}: {}", intake_staging.string(), ec.message()));
  }
  for (const BackupFile& file : manifest.files) {
    const fs::path to =
        file.path == kDatabase ? database_staging : intake_staging / fs::path(file.path).filename();
    auto copied = CopyFile(source / file.path, to, file.path);
    if (!copied.ok()) return copied.status();
    // Checked again as copied: the backup may have changed since VerifyBackup read it.
    if (copied->bytes != file.bytes || copied->sha256 != file.sha256) {
      return Status::InvalidParameter(
          fmt::format("{} changed while it was restored: run the restore again", file.path));
    }
  }
  ENGRAM_RETURN_IF_ERROR(SyncPath(intake_staging));
  if (::rename(intake_staging.c_str(), (data / kIntake).c_str()) != 0) {
    return FileError("cannot rename", intake_staging, errno);
  }
  if (::rename(database_staging.c_str(), (data / kDatabase).c_str()) != 0) {
    return FileError("cannot rename", database_staging, errno);
  }
  return Status::Ok();
}

}  // namespace

Result<BackupManifest> RestoreSqliteDataDir(const SqliteRestoreOptions& options) {
  auto manifest = VerifyBackup(options.source);
  if (!manifest.ok()) return manifest.status();
  if (manifest->schema_version > options.max_schema_version) {
    return Status::InvalidParameter(
        fmt::format("the backup's schema v{} is newer than this binary's v{}: restore it with the "
                    "Engram version that took it ({})",
                    manifest->schema_version, options.max_schema_version,
                    manifest->engram_version.empty() ? "unknown" : manifest->engram_version));
  }
  const fs::path data(options.data_dir);
  auto empty = IsMissingOrEmpty(data);
  if (!empty.ok()) return empty.status();
  if (!*empty) {
    return Status::InvalidParameter(
        fmt::format("data directory {} is not empty: restore into an empty one", data.string()));
  }
  const fs::path intake_staging = data / (std::string(kIntake) + ".restoring");
  const fs::path database_staging = data / (std::string(kDatabase) + ".restoring");
  Status placed =
      PlaceBackupFiles(*manifest, options.source, data, intake_staging, database_staging);
  if (!placed.ok()) {
    // The directory was empty: what is in it now is this restore's, taken away so that the
    // directory is empty again for the next attempt.
    std::error_code ignored;
    fs::remove_all(intake_staging, ignored);
    fs::remove(database_staging, ignored);
    if (!fs::exists(data / kDatabase, ignored)) fs::remove_all(data / kIntake, ignored);
    return placed;
  }
  ENGRAM_RETURN_IF_ERROR(SyncPath(data));
  return manifest;
}

}  // namespace engram
