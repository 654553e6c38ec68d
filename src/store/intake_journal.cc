#include "store/intake_journal.h"

#include <dirent.h>
#include <fcntl.h>
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <chrono>
#include <cstring>

#include "common/errno_status.h"
#include "common/posix_file.h"
#include "common/thread_util.h"

namespace engram {

namespace {

constexpr size_t kHeaderBytes = 8;
constexpr const char* kPrefix = "intake-";
constexpr const char* kSuffix = ".log";
// One group's write is bounded so a burst of large records does not build one huge buffer.
constexpr size_t kMaxGroupBytes = 8 * 1024 * 1024;

constexpr std::array<uint32_t, 256> MakeCrcTable() {
  std::array<uint32_t, 256> table{};
  for (uint32_t i = 0; i < 256; ++i) {
    uint32_t c = i;
    for (int k = 0; k < 8; ++k) c = (c & 1) ? (c >> 1) ^ 0x82F63B78u : c >> 1;
    table[i] = c;
  }
  return table;
}
constexpr std::array<uint32_t, 256> kCrcTable = MakeCrcTable();

void PutU32(std::string& out, uint32_t v) {
  for (int i = 0; i < 4; ++i) out.push_back(static_cast<char>((v >> (8 * i)) & 0xff));
}

uint32_t GetU32(const char* p) {
  uint32_t v = 0;
  for (int i = 3; i >= 0; --i) v = (v << 8) | static_cast<unsigned char>(p[i]);
  return v;
}

uint32_t RecordCrc(uint32_t length, const char* payload) {
  char len[4];
  for (int i = 0; i < 4; ++i) len[i] = static_cast<char>((length >> (8 * i)) & 0xff);
  return Crc32c(payload, length, Crc32c(len, 4));
}

// Running out of space is kUnavailable (the journal backs off and retries), anything else
// kInternal (fatal for the journal).
// The failed call's errno, read first thing.
Status Errno(const std::string& what) { return ErrnoStatus(what, errno); }

bool IsOutOfSpace(const Status& st) { return st.code() == StatusCode::kUnavailable; }

// Bytes the probe writes: enough that a group of small records fits once it succeeds.
constexpr size_t kProbeBytes = 64 * 1024;
constexpr const char* kProbeName = "space-probe.tmp";  // not an intake-<n>.log: never read back

Status SyncDir(const std::string& dir) {
  Status st = SyncPath(dir);
  if (st.ok()) return st;
  return Status(st.code(), "intake journal: " + st.message());
}

template <typename WriteFn>
Status WriteAll(const WriteFn& write, int fd, const std::string& data) {
  size_t done = 0;
  while (done < data.size()) {
    const ssize_t n = write(fd, data.data() + done, data.size() - done);
    if (n < 0) {
      if (errno == EINTR) continue;
      return Errno("intake journal: write");
    }
    done += static_cast<size_t>(n);
  }
  return Status::Ok();
}

// The file number in "intake-<n>.log", or 0 for any other name.
uint64_t FileNumber(const std::string& name) {
  const size_t prefix = std::strlen(kPrefix), suffix = std::strlen(kSuffix);
  if (name.size() <= prefix + suffix || name.compare(0, prefix, kPrefix) != 0 ||
      name.compare(name.size() - suffix, suffix, kSuffix) != 0) {
    return 0;
  }
  uint64_t n = 0;
  for (size_t i = prefix; i < name.size() - suffix; ++i) {
    if (name[i] < '0' || name[i] > '9' || n > (UINT64_MAX - 9) / 10) return 0;
    n = n * 10 + static_cast<uint64_t>(name[i] - '0');
  }
  return n;
}

}  // namespace

bool IntakeJournal::IsRecordFile(const std::string& name) { return FileNumber(name) != 0; }

uint32_t Crc32c(const void* data, size_t size, uint32_t crc) {
  const auto* p = static_cast<const unsigned char*>(data);
  crc = ~crc;
  for (size_t i = 0; i < size; ++i) crc = kCrcTable[(crc ^ p[i]) & 0xff] ^ (crc >> 8);
  return ~crc;
}

IntakeJournal::IntakeJournal(IntakeJournalOptions options)
    : options_(std::move(options)), clock_(options_.clock ? options_.clock : RealClock()) {}

Result<std::unique_ptr<IntakeJournal>> IntakeJournal::Open(IntakeJournalOptions options) {
  if (options.dir.empty()) return Status::InvalidParameter("intake journal: no directory");
  std::unique_ptr<IntakeJournal> journal(new IntakeJournal(std::move(options)));
  DIR* dir = ::opendir(journal->options_.dir.c_str());
  if (dir == nullptr) return Errno("intake journal: open directory " + journal->options_.dir);
  while (const dirent* entry = ::readdir(dir)) {
    const uint64_t n = FileNumber(entry->d_name);
    if (n != 0) journal->leftover_files_.push_back(n);
  }
  ::closedir(dir);
  std::sort(journal->leftover_files_.begin(), journal->leftover_files_.end());
  if (!journal->leftover_files_.empty()) {
    MutexLock lock(&journal->mu_);  // uncontended: the thread starts below
    journal->next_file_no_ = journal->leftover_files_.back() + 1;
  }
  journal->thread_ = std::thread([j = journal.get()] {
    NameThisThread("intake-journal");
    j->Loop();
  });
  return journal;
}

void IntakeJournal::Stop() {
  {
    MutexLock lock(&mu_);
    stopping_ = true;
    cv_.SignalAll();
  }
  // The thread ends once no write is in progress (a caller writing one drains the queue or
  // hands it to the thread), so nothing touches the file after this.
  if (thread_.joinable()) thread_.join();
}

IntakeJournal::~IntakeJournal() {
  Stop();
  if (fd_ >= 0) ::close(fd_);
  if (cut_fd_ >= 0) ::close(cut_fd_);
  // A clean stop leaves no file behind when every record was released.
  std::vector<std::string> unlink;
  {
    MutexLock lock(&mu_);
    if (!segments_.empty()) segments_.back().closed = true;
    unlink = TakeDeletableLocked();
  }
  for (const auto& path : unlink) ::unlink(path.c_str());
}

std::string IntakeJournal::FilePath(uint64_t file_no) const {
  char name[48];
  std::snprintf(name, sizeof(name), "%s%020llu%s", kPrefix,
                static_cast<unsigned long long>(file_no), kSuffix);
  return options_.dir + "/" + name;
}

Result<std::vector<std::string>> IntakeJournal::ReadLeftovers() const {
  std::vector<std::string> out;
  for (uint64_t file_no : leftover_files_) {
    const std::string path = FilePath(file_no);
    const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) return Errno("intake journal: open " + path);
    std::string data;
    char buf[1 << 16];
    for (;;) {
      const ssize_t n = ::read(fd, buf, sizeof(buf));
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) {
        Status st = Errno("intake journal: read " + path);
        ::close(fd);
        return st;
      }
      if (n == 0) break;
      data.append(buf, static_cast<size_t>(n));
    }
    ::close(fd);
    // Records up to the first torn or corrupt one (see the header).
    size_t at = 0;
    while (data.size() - at >= kHeaderBytes) {
      const uint32_t length = GetU32(data.data() + at);
      const uint32_t crc = GetU32(data.data() + at + 4);
      if (length > options_.max_record_bytes || data.size() - at - kHeaderBytes < length) break;
      const char* payload = data.data() + at + kHeaderBytes;
      if (RecordCrc(length, payload) != crc) break;
      out.emplace_back(payload, length);
      at += kHeaderBytes + length;
    }
  }
  return out;
}

Status IntakeJournal::DropLeftovers() {
  for (uint64_t file_no : leftover_files_) {
    const std::string path = FilePath(file_no);
    if (::unlink(path.c_str()) != 0 && errno != ENOENT) {
      return Errno("intake journal: delete " + path);
    }
  }
  leftover_files_.clear();
  return SyncDir(options_.dir);
}

ssize_t IntakeJournal::Write(int fd, const void* data, size_t size) const {
  return options_.write_fn ? options_.write_fn(fd, data, size) : ::write(fd, data, size);
}

int IntakeJournal::DataSync(int fd) const {
  return options_.fdatasync_fn ? options_.fdatasync_fn(fd) : ::fdatasync(fd);
}

Status IntakeJournal::RefusalLocked(Clock::SteadyTime now) const {
  if (!failed_.ok()) return failed_;
  if (!out_of_space_.ok() && now < retry_at_) return out_of_space_;
  return Status::Ok();
}

void IntakeJournal::NoteOutcomeLocked(const Status& st) {
  if (st.ok()) {
    if (!out_of_space_.ok()) spdlog::info("intake journal: disk space is back; writing again");
    out_of_space_ = Status::Ok();
    backoff_delay_ = std::chrono::milliseconds(0);
    return;
  }
  if (!IsOutOfSpace(st)) {
    if (failed_.ok()) {
      spdlog::error("{}; refusing writes until a restart", st.message());
      failed_ = Status::Unavailable(st.message() + "; the journal refuses writes until a restart");
    }
    return;
  }
  if (out_of_space_.ok()) spdlog::warn("{}; retrying with backoff", st.message());
  backoff_delay_ = backoff_delay_.count() == 0 ? options_.retry_initial
                                               : std::min(2 * backoff_delay_, options_.retry_max);
  retry_at_ = clock_->SteadyNow() + backoff_delay_;
  out_of_space_ =
      Status::Unavailable("intake journal: out of disk space; writes resume once space is freed");
  cv_.SignalAll();  // the thread sleeps until the new retry_at_
}

Status IntakeJournal::Health() const {
  MutexLock lock(&mu_);
  if (!failed_.ok()) return failed_;
  if (!out_of_space_.ok()) return out_of_space_;  // until a write or probe has succeeded
  if (stopping_) return Status::Unavailable("intake journal is shutting down");
  return Status::Ok();
}

void IntakeJournal::Append(std::string payload, Done done) {
  std::vector<Pending> group;
  Status refused;
  {
    MutexLock lock(&mu_);
    if (Status r = RefusalLocked(clock_->SteadyNow()); !r.ok()) {
      refused = r;
      ++stats_.refused;
    } else if (stopping_) {
      refused = Status::Unavailable("intake journal is shutting down");
    } else if (payload.size() > options_.max_record_bytes) {
      refused = Status::InvalidParameter("intake journal: record too large");
    } else {
      // Numbered in queue order, which is file order: a file holds a contiguous range.
      queue_.push_back(Pending{std::move(payload), std::move(done), next_number_++});
      if (leading_) return;  // the write in progress, or the one after it, takes it along
      leading_ = true;
      group = TakeGroupLocked();
    }
  }
  if (!refused.ok()) return done(refused, kNoRecord);
  // This caller writes the group itself: no hand-off to the journal's thread, whose wake-up on
  // busy cores measured 0.7 ms on average (perf sched), twice the fdatasync.
  SyncGroup(group);
  MutexLock lock(&mu_);
  if (queue_.empty()) {
    leading_ = false;
    // Under the lock: Stop may return and destroy us next. Out of space: the journal's thread
    // waits for no writer before it times the next probe.
    if (stopping_ || !out_of_space_.ok()) cv_.SignalAll();
    return;
  }
  // More arrived meanwhile: the journal's thread writes them, so that no caller is kept.
  hand_off_ = true;
  cv_.SignalAll();
}

std::vector<IntakeJournal::Pending> IntakeJournal::TakeGroupLocked() {
  std::vector<Pending> group;
  size_t bytes = 0;
  while (!queue_.empty() && (group.empty() || bytes < kMaxGroupBytes)) {
    bytes += queue_.front().payload.size() + kHeaderBytes;
    group.push_back(std::move(queue_.front()));
    queue_.pop_front();
  }
  return group;
}

void IntakeJournal::SyncGroup(std::vector<Pending>& group) {
  Status st;
  {
    MutexLock lock(&mu_);
    // Records queued before the journal ran out of space are refused with the records after.
    st = RefusalLocked(clock_->SteadyNow());
  }
  if (st.ok()) {
    st = WriteGroup(group);
    // None of the group is acknowledged, and its file is not written again (see the header).
    if (!st.ok() && fd_ >= 0) {
      Status abandoned = AbandonSegment();
      if (!abandoned.ok()) st = abandoned;  // fatal: an unacknowledged record could be read back
    }
    MutexLock lock(&mu_);
    if (failed_.ok()) NoteOutcomeLocked(st);
    if (!st.ok()) st = failed_.ok() ? out_of_space_ : failed_;
  }
  if (!st.ok()) {
    MutexLock lock(&mu_);
    stats_.refused += group.size();
  }
  for (auto& p : group) p.done(st, st.ok() ? p.number : kNoRecord);
  group.clear();
}

Status IntakeJournal::AbandonSegment() {
  // Truncating frees space rather than taking it; the sync makes the shorter length durable.
  // Records before fd_bytes_ were synced by earlier groups and stay readable.
  Status st;
  if (::ftruncate(fd_, static_cast<off_t>(fd_bytes_)) != 0) {
    st = Status::Internal(std::string("intake journal: truncate after a failed write: ") +
                          std::strerror(errno));
  } else if (options_.sync && DataSync(fd_) != 0) {
    st = Errno("intake journal: sync after truncating");
  }
  if (IsOutOfSpace(st)) {
    // The cut is synced before anything else is written (SyncCut); it is metadata (the size),
    // which a later sync still writes, unlike data pages a failed sync may have dropped.
    cut_fd_ = fd_;
  } else {
    ::close(fd_);
  }
  fd_ = -1;
  std::vector<std::string> unlink;
  {
    MutexLock lock(&mu_);
    segments_.back().closed = true;
    unlink = TakeDeletableLocked();  // a fresh file that got no record is deleted at once
  }
  for (const auto& path : unlink) ::unlink(path.c_str());
  return st;
}

Status IntakeJournal::SyncCut() {
  if (cut_fd_ < 0) return Status::Ok();
  if (DataSync(cut_fd_) != 0) return Errno("intake journal: sync after truncating");
  ::close(cut_fd_);
  cut_fd_ = -1;
  return Status::Ok();
}

Status IntakeJournal::ProbeSpace() {
  ENGRAM_RETURN_IF_ERROR(SyncCut());
  const std::string path = options_.dir + "/" + kProbeName;
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return Errno("intake journal: create " + path);
  Status st = WriteAll([this](int f, const void* d, size_t n) { return Write(f, d, n); }, fd,
                       std::string(kProbeBytes, '\0'));
  if (st.ok() && DataSync(fd) != 0) st = Errno("intake journal: sync " + path);
  ::close(fd);
  ::unlink(path.c_str());
  return st;
}

void IntakeJournal::Release(uint64_t number) {
  std::vector<std::string> unlink;
  {
    MutexLock lock(&mu_);
    for (auto& seg : segments_) {
      if (number >= seg.first && number < seg.first + seg.appended) {
        ++seg.released;
        break;
      }
    }
    unlink = TakeDeletableLocked();
  }
  // A deleted file that reappears after a crash (its directory entry not yet synced) is only
  // read back and stored again, which the owner does idempotently.
  for (const auto& path : unlink) ::unlink(path.c_str());
}

std::vector<std::string> IntakeJournal::TakeDeletableLocked() {
  std::vector<std::string> out;
  for (auto it = segments_.begin(); it != segments_.end();) {
    if (it->closed && it->released >= it->appended) {
      out.push_back(FilePath(it->file_no));
      it = segments_.erase(it);
    } else {
      ++it;
    }
  }
  return out;
}

IntakeJournal::Stats IntakeJournal::GetStats() const {
  MutexLock lock(&mu_);
  Stats s = stats_;
  s.live_files = segments_.size();
  return s;
}

void IntakeJournal::Loop() {
  MutexLock lock(&mu_);
  for (;;) {
    // Each wake-up (hand-off, stop, a leader done, a new backoff, the backoff's end) looks at the
    // whole state again.
    if (hand_off_) {
      hand_off_ = false;
    } else if (stopping_ && !leading_) {
      return;  // nobody writing, and nothing queued (a writer drains)
    } else if (failed_.ok() && !out_of_space_.ok() && !leading_ && !stopping_ &&
               clock_->SteadyNow() >= retry_at_) {
      // Out of space and nobody writing: probe once the backoff has passed, so that health
      // recovers without waiting for an Append. Appends meanwhile queue behind it.
      leading_ = true;
      lock.Unlock();
      Status st = ProbeSpace();
      lock.Lock();
      // A probe that fails otherwise (not for space) leaves the verdict to the next real write.
      if (failed_.ok()) NoteOutcomeLocked(st.ok() || IsOutOfSpace(st) ? st : Status::Ok());
    } else {
      if (failed_.ok() && !out_of_space_.ok() && !leading_) {
        clock_->WaitUntil(&cv_, &mu_, retry_at_);
      } else {
        cv_.Wait(&mu_);
      }
      continue;
    }
    // Leads until the queue is empty (leading_ stays set meanwhile).
    while (!queue_.empty()) {
      std::vector<Pending> group = TakeGroupLocked();
      lock.Unlock();
      SyncGroup(group);
      lock.Lock();
    }
    leading_ = false;
  }
}

Status IntakeJournal::OpenSegment() {
  uint64_t file_no;
  {
    MutexLock lock(&mu_);
    file_no = next_file_no_++;
  }
  const std::string path = FilePath(file_no);
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_APPEND | O_CLOEXEC, 0644);
  if (fd < 0) return Errno("intake journal: create " + path);
  // The new file's directory entry must be durable before a record in it is acknowledged.
  if (options_.sync) {
    Status st = SyncDir(options_.dir);
    if (!st.ok()) {
      ::close(fd);
      ::unlink(path.c_str());
      return st;
    }
  }
  fd_ = fd;
  fd_bytes_ = 0;
  MutexLock lock(&mu_);
  segments_.push_back(Segment{file_no, 0, 0, 0, false});
  return Status::Ok();
}

Status IntakeJournal::WriteGroup(const std::vector<Pending>& group) {
  // A file cut back after a failed write must be durably short before anything follows it.
  ENGRAM_RETURN_IF_ERROR(SyncCut());
  if (fd_ >= 0 && fd_bytes_ >= options_.segment_bytes) {
    ::close(fd_);
    fd_ = -1;
    std::vector<std::string> unlink;
    {
      MutexLock lock(&mu_);
      segments_.back().closed = true;
      unlink = TakeDeletableLocked();
    }
    for (const auto& path : unlink) ::unlink(path.c_str());
  }
  if (fd_ < 0) ENGRAM_RETURN_IF_ERROR(OpenSegment());
  std::string buf;
  size_t total = 0;
  for (const auto& p : group) total += kHeaderBytes + p.payload.size();
  buf.reserve(total);
  for (const auto& p : group) {
    const auto length = static_cast<uint32_t>(p.payload.size());
    PutU32(buf, length);
    PutU32(buf, RecordCrc(length, p.payload.data()));
    buf.append(p.payload);
  }
  const auto began = clock_->SteadyNow();
  ENGRAM_RETURN_IF_ERROR(
      WriteAll([this](int f, const void* d, size_t n) { return Write(f, d, n); }, fd_, buf));
  if (options_.sync && DataSync(fd_) != 0) return Errno("intake journal: fdatasync");
  const double seconds = std::chrono::duration<double>(clock_->SteadyNow() - began).count();
  fd_bytes_ += buf.size();
  MutexLock lock(&mu_);
  Segment& seg = segments_.back();
  if (seg.appended == 0) seg.first = group.front().number;
  seg.appended += group.size();
  stats_.records += group.size();
  ++stats_.syncs;
  stats_.sync_seconds += seconds;
  for (size_t i = 0; i < Stats::kSyncBuckets.size(); ++i) {
    if (seconds <= Stats::kSyncBuckets[i]) ++stats_.sync_le[i];
  }
  return Status::Ok();
}

}  // namespace engram
