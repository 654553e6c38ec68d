#include "store/sqlite_util.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "common/codec.h"

namespace engram::sqlite {

Status ErrorStatus(sqlite3* db, int rc, std::string_view what) {
  std::string msg = fmt::format("{}: {} ({})", what, db ? sqlite3_errmsg(db) : "", rc);
  int primary = rc & 0xFF;
  // Disk full, I/O errors and read-only files mean the store cannot take writes right now.
  if (primary == SQLITE_FULL || primary == SQLITE_IOERR || primary == SQLITE_READONLY ||
      primary == SQLITE_BUSY || primary == SQLITE_LOCKED || primary == SQLITE_CANTOPEN) {
    return Status::Unavailable(std::move(msg));
  }
  return Status::Internal(std::move(msg));
}

bool LastErrorIsFull(sqlite3* db) {
  return db != nullptr && (sqlite3_extended_errcode(db) & 0xFF) == SQLITE_FULL;
}

int64_t FreeBytes(const std::string& dir) {
  struct statvfs vfs;
  if (::statvfs(dir.c_str(), &vfs) != 0) return -1;
  return static_cast<int64_t>(vfs.f_bavail) * static_cast<int64_t>(vfs.f_frsize);
}

Status ProbeFreeSpace(const std::string& dir, size_t bytes) {
  const std::string path = dir + "/.engram-space-probe";
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (fd < 0) return Status::Unavailable(fmt::format("space probe: {}", std::strerror(errno)));
  const std::string zeros(bytes, '\0');
  size_t done = 0;
  int err = 0;
  while (done < zeros.size() && err == 0) {
    const ssize_t n = ::write(fd, zeros.data() + done, zeros.size() - done);
    if (n < 0 && errno != EINTR) err = errno;
    if (n > 0) done += static_cast<size_t>(n);
  }
  if (err == 0 && ::fdatasync(fd) != 0) err = errno;
  ::close(fd);
  ::unlink(path.c_str());
  if (err != 0) return Status::Unavailable(fmt::format("space probe: {}", std::strerror(err)));
  return Status::Ok();
}

Stmt::Stmt(sqlite3* db, std::string_view sql) : db_(db) {
  prepare_rc_ = sqlite3_prepare_v3(db, sql.data(), static_cast<int>(sql.size()),
                                   SQLITE_PREPARE_PERSISTENT, &stmt_, nullptr);
  if (prepare_rc_ != SQLITE_OK) {
    sqlite3_finalize(stmt_);
    stmt_ = nullptr;
  }
}

Stmt::~Stmt() { sqlite3_finalize(stmt_); }

Status Stmt::prepare_status() const {
  if (prepare_rc_ == SQLITE_OK) return Status::Ok();
  return ErrorStatus(db_, prepare_rc_, "prepare");
}

void Stmt::Reset() {
  sqlite3_reset(stmt_);
  sqlite3_clear_bindings(stmt_);
}

void Stmt::Bind(int i, std::string_view v) {
  sqlite3_bind_text(stmt_, i, v.data(), static_cast<int>(v.size()), SQLITE_TRANSIENT);
}
void Stmt::BindBlob(int i, std::string_view v) {
  sqlite3_bind_blob(stmt_, i, v.data(), static_cast<int>(v.size()), SQLITE_TRANSIENT);
}
void Stmt::Bind(int i, int64_t v) { sqlite3_bind_int64(stmt_, i, v); }
void Stmt::BindNull(int i) { sqlite3_bind_null(stmt_, i); }
void Stmt::Bind(int i, const std::optional<int64_t>& v) {
  if (v) {
    Bind(i, *v);
  } else {
    BindNull(i);
  }
}

bool Stmt::Step(Status* status) {
  int rc = sqlite3_step(stmt_);
  if (rc == SQLITE_ROW) return true;
  if (rc != SQLITE_DONE) *status = ErrorStatus(db_, rc, "step");
  return false;
}

Status Stmt::Exec() {
  Status st;
  while (Step(&st)) {
  }
  sqlite3_reset(stmt_);
  return st;
}

std::string Stmt::ColumnText(int i) const {
  const auto* p = sqlite3_column_text(stmt_, i);
  int n = sqlite3_column_bytes(stmt_, i);
  return p ? std::string(reinterpret_cast<const char*>(p), static_cast<size_t>(n)) : std::string();
}
std::string Stmt::ColumnBlob(int i) const {
  const void* p = sqlite3_column_blob(stmt_, i);
  int n = sqlite3_column_bytes(stmt_, i);
  return p ? std::string(static_cast<const char*>(p), static_cast<size_t>(n)) : std::string();
}
int64_t Stmt::ColumnInt(int i) const { return sqlite3_column_int64(stmt_, i); }
bool Stmt::ColumnIsNull(int i) const { return sqlite3_column_type(stmt_, i) == SQLITE_NULL; }

Status ExecScript(sqlite3* db, const char* sql) {
  char* err = nullptr;
  int rc = sqlite3_exec(db, sql, nullptr, nullptr, &err);
  if (rc != SQLITE_OK) {
    std::string msg = err ? err : "";
    sqlite3_free(err);
    return ErrorStatus(db, rc, "exec: " + msg);
  }
  return Status::Ok();
}

std::vector<float> StmtRow::Vector(int i) const {
  return stmt_.ColumnIsNull(i) ? std::vector<float>() : FloatVectorFromBytes(stmt_.ColumnBlob(i));
}

}  // namespace engram::sqlite
