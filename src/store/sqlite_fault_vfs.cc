#include "store/sqlite_fault_vfs.h"

#include <utility>

namespace engram {

namespace {

// An open file: this header, then the default VFS's own file structure (its szOsFile bytes),
// which SQLite allocates for us as one block (FaultVfs sets szOsFile to the sum).
struct FaultFile {
  sqlite3_file base;  // first: SQLite sees a FaultFile as an sqlite3_file
  FaultVfs* owner;
  int kind;  // the SQLITE_OPEN_* kind the file was opened as
};

// The default VFS's structure starts right after the header; SQLite aligns the block to 8 bytes
// and so must the header's size be.
static_assert(sizeof(FaultFile) % 8 == 0, "the file structure after FaultFile is misaligned");

FaultFile* AsFault(sqlite3_file* f) { return reinterpret_cast<FaultFile*>(f); }
sqlite3_file* Real(sqlite3_file* f) { return reinterpret_cast<sqlite3_file*>(AsFault(f) + 1); }
const sqlite3_io_methods& M(sqlite3_file* f) { return *Real(f)->pMethods; }

// Every method but xWrite and xSync goes straight to the default VFS's file.
int Close(sqlite3_file* f) { return M(f).xClose(Real(f)); }
int Read(sqlite3_file* f, void* data, int bytes, sqlite3_int64 offset) {
  return M(f).xRead(Real(f), data, bytes, offset);
}
int Truncate(sqlite3_file* f, sqlite3_int64 size) { return M(f).xTruncate(Real(f), size); }
int FileSize(sqlite3_file* f, sqlite3_int64* size) { return M(f).xFileSize(Real(f), size); }
int Lock(sqlite3_file* f, int level) { return M(f).xLock(Real(f), level); }
int Unlock(sqlite3_file* f, int level) { return M(f).xUnlock(Real(f), level); }
int CheckReservedLock(sqlite3_file* f, int* out) { return M(f).xCheckReservedLock(Real(f), out); }
int FileControl(sqlite3_file* f, int op, void* arg) { return M(f).xFileControl(Real(f), op, arg); }
int SectorSize(sqlite3_file* f) { return M(f).xSectorSize(Real(f)); }
int DeviceCharacteristics(sqlite3_file* f) { return M(f).xDeviceCharacteristics(Real(f)); }
// Shared memory (the WAL index) exists from version 2 of the methods on; without it SQLite
// cannot use WAL mode on the file, as with the default VFS's own methods.
int ShmMap(sqlite3_file* f, int region, int size, int extend, void volatile** out) {
  if (M(f).iVersion < 2) return SQLITE_IOERR_SHMMAP;
  return M(f).xShmMap(Real(f), region, size, extend, out);
}
int ShmLock(sqlite3_file* f, int offset, int n, int flags) {
  if (M(f).iVersion < 2) return SQLITE_IOERR_SHMLOCK;
  return M(f).xShmLock(Real(f), offset, n, flags);
}
void ShmBarrier(sqlite3_file* f) {
  if (M(f).iVersion >= 2) M(f).xShmBarrier(Real(f));
}
int ShmUnmap(sqlite3_file* f, int delete_flag) {
  return M(f).iVersion < 2 ? SQLITE_OK : M(f).xShmUnmap(Real(f), delete_flag);
}
int Fetch(sqlite3_file* f, sqlite3_int64 offset, int bytes, void** out) {
  if (M(f).iVersion < 3) {
    *out = nullptr;  // no memory map: SQLite reads instead
    return SQLITE_OK;
  }
  return M(f).xFetch(Real(f), offset, bytes, out);
}
int Unfetch(sqlite3_file* f, sqlite3_int64 offset, void* p) {
  return M(f).iVersion < 3 ? SQLITE_OK : M(f).xUnfetch(Real(f), offset, p);
}

sqlite3_io_methods MakeMethods(int (*write)(sqlite3_file*, const void*, int, sqlite3_int64),
                               int (*sync)(sqlite3_file*, int)) {
  sqlite3_io_methods m{};
  m.iVersion = 3;
  m.xClose = Close;
  m.xRead = Read;
  m.xWrite = write;
  m.xTruncate = Truncate;
  m.xSync = sync;
  m.xFileSize = FileSize;
  m.xLock = Lock;
  m.xUnlock = Unlock;
  m.xCheckReservedLock = CheckReservedLock;
  m.xFileControl = FileControl;
  m.xSectorSize = SectorSize;
  m.xDeviceCharacteristics = DeviceCharacteristics;
  m.xShmMap = ShmMap;
  m.xShmLock = ShmLock;
  m.xShmBarrier = ShmBarrier;
  m.xShmUnmap = ShmUnmap;
  m.xFetch = Fetch;
  m.xUnfetch = Unfetch;
  return m;
}

}  // namespace

FaultVfs::FaultVfs(std::string name) : name_(std::move(name)), base_(sqlite3_vfs_find(nullptr)) {
  // The default VFS's methods, called with the default VFS itself; only xOpen wraps.
  vfs_.iVersion = 2;
  vfs_.szOsFile = static_cast<int>(sizeof(FaultFile)) + base_->szOsFile;
  vfs_.mxPathname = base_->mxPathname;
  vfs_.zName = name_.c_str();
  vfs_.pAppData = this;
  vfs_.xOpen = Open;
  vfs_.xDelete = [](sqlite3_vfs* v, const char* name, int sync_dir) {
    return BaseOf(v)->xDelete(BaseOf(v), name, sync_dir);
  };
  vfs_.xAccess = [](sqlite3_vfs* v, const char* name, int flags, int* out) {
    return BaseOf(v)->xAccess(BaseOf(v), name, flags, out);
  };
  vfs_.xFullPathname = [](sqlite3_vfs* v, const char* name, int n, char* out) {
    return BaseOf(v)->xFullPathname(BaseOf(v), name, n, out);
  };
  vfs_.xDlOpen = [](sqlite3_vfs* v, const char* name) {
    return BaseOf(v)->xDlOpen(BaseOf(v), name);
  };
  vfs_.xDlError = [](sqlite3_vfs* v, int n, char* out) { BaseOf(v)->xDlError(BaseOf(v), n, out); };
  vfs_.xDlSym = [](sqlite3_vfs* v, void* lib, const char* sym) {
    return BaseOf(v)->xDlSym(BaseOf(v), lib, sym);
  };
  vfs_.xDlClose = [](sqlite3_vfs* v, void* lib) { BaseOf(v)->xDlClose(BaseOf(v), lib); };
  vfs_.xRandomness = [](sqlite3_vfs* v, int n, char* out) {
    return BaseOf(v)->xRandomness(BaseOf(v), n, out);
  };
  vfs_.xSleep = [](sqlite3_vfs* v, int us) { return BaseOf(v)->xSleep(BaseOf(v), us); };
  vfs_.xCurrentTime = [](sqlite3_vfs* v, double* out) {
    return BaseOf(v)->xCurrentTime(BaseOf(v), out);
  };
  vfs_.xGetLastError = [](sqlite3_vfs* v, int n, char* out) {
    return BaseOf(v)->xGetLastError(BaseOf(v), n, out);
  };
  vfs_.xCurrentTimeInt64 = [](sqlite3_vfs* v, sqlite3_int64* out) {
    return BaseOf(v)->xCurrentTimeInt64(BaseOf(v), out);
  };
  sqlite3_vfs_register(&vfs_, /*makeDflt=*/0);
}

sqlite3_vfs* FaultVfs::BaseOf(sqlite3_vfs* vfs) {
  return static_cast<FaultVfs*>(vfs->pAppData)->base_;
}

FaultVfs::~FaultVfs() { sqlite3_vfs_unregister(&vfs_); }

void FaultVfs::Set(const FaultPlan& plan) {
  MutexLock lock(&mu_);
  plan_ = plan;
}

FaultPlan FaultVfs::plan() const {
  MutexLock lock(&mu_);
  return plan_;
}

FaultPlan FaultVfs::FaultsFor(int kind) const {
  const FaultPlan current = plan();
  return (current.files & kind) != 0 ? current : FaultPlan{};
}

int FaultVfs::Open(sqlite3_vfs* vfs, const char* name, sqlite3_file* file, int flags,
                   int* out_flags) {
  static const sqlite3_io_methods kMethods = MakeMethods(Write, Sync);
  FaultFile* f = AsFault(file);
  f->base.pMethods = nullptr;  // SQLite closes only a file whose methods are set
  f->owner = static_cast<FaultVfs*>(vfs->pAppData);
  f->kind = flags & (SQLITE_OPEN_MAIN_DB | SQLITE_OPEN_TEMP_DB | SQLITE_OPEN_TRANSIENT_DB |
                     SQLITE_OPEN_MAIN_JOURNAL | SQLITE_OPEN_TEMP_JOURNAL | SQLITE_OPEN_SUBJOURNAL |
                     SQLITE_OPEN_SUPER_JOURNAL | SQLITE_OPEN_WAL);
  const int rc = BaseOf(vfs)->xOpen(BaseOf(vfs), name, Real(file), flags, out_flags);
  if (Real(file)->pMethods != nullptr) f->base.pMethods = &kMethods;
  return rc;
}

int FaultVfs::Write(sqlite3_file* file, const void* data, int bytes, sqlite3_int64 offset) {
  FaultVfs* owner = AsFault(file)->owner;
  const FaultPlan faults = owner->FaultsFor(AsFault(file)->kind);
  if (faults.full) {
    owner->failed_writes_.fetch_add(1);
    return SQLITE_FULL;
  }
  if (faults.short_writes) {
    owner->failed_writes_.fetch_add(1);
    (void)M(file).xWrite(Real(file), data, bytes / 2, offset);
    return SQLITE_IOERR_WRITE;
  }
  return M(file).xWrite(Real(file), data, bytes, offset);
}

int FaultVfs::Sync(sqlite3_file* file, int flags) {
  FaultVfs* owner = AsFault(file)->owner;
  if (owner->FaultsFor(AsFault(file)->kind).fail_sync) {
    owner->failed_syncs_.fetch_add(1);
    return SQLITE_IOERR_FSYNC;
  }
  return M(file).xSync(Real(file), flags);
}

}  // namespace engram
