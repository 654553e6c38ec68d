// IntakeJournal: what was acknowledged is read back after the journal is gone, released records
// leave no files, torn and corrupt tails end a file's records, refusals are clean, and running
// out of space is survived without acknowledging or reading back what was not synced.
#include "store/intake_journal.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <condition_variable>
#include <filesystem>
#include <fstream>
#include <functional>
#include <future>
#include <iterator>
#include <map>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "common/clock.h"

namespace engram {
namespace {

namespace fs = std::filesystem;

class IntakeJournalTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/engram-intake-XXXXXX";
    dir_ = mkdtemp(tmpl);
  }
  void TearDown() override { fs::remove_all(dir_); }

  std::unique_ptr<IntakeJournal> Open(size_t segment_bytes = 4 * 1024 * 1024) {
    auto j = IntakeJournal::Open({.dir = dir_, .segment_bytes = segment_bytes});
    EXPECT_TRUE(j.ok()) << j.status().ToString();
    return j.ok() ? std::move(*j) : nullptr;
  }
  // Appends and waits until it is durable; returns its number.
  static uint64_t AppendSync(IntakeJournal& j, std::string payload) {
    std::promise<std::pair<Status, uint64_t>> done;
    auto f = done.get_future();
    j.Append(std::move(payload), [&done](Status st, uint64_t n) { done.set_value({st, n}); });
    auto [st, n] = f.get();
    EXPECT_TRUE(st.ok());
    return n;
  }
  std::vector<fs::path> Files() const {
    std::vector<fs::path> out;
    for (const auto& e : fs::directory_iterator(dir_)) out.push_back(e.path());
    std::sort(out.begin(), out.end());
    return out;
  }
  std::vector<std::string> Leftovers() {
    auto j = Open();
    auto left = j->ReadLeftovers();
    EXPECT_TRUE(left.ok());
    return left.ok() ? *left : std::vector<std::string>{};
  }

  std::string dir_;
};

TEST(Crc32cTest, KnownVector) {
  const std::string s = "123456789";
  EXPECT_EQ(Crc32c(s.data(), s.size()), 0xE3069283u);
  // Continuing a CRC equals one pass over the concatenation.
  EXPECT_EQ(Crc32c(s.data() + 4, 5, Crc32c(s.data(), 4)), 0xE3069283u);
}

TEST_F(IntakeJournalTest, AcknowledgedRecordsAreReadBackInOrder) {
  constexpr int kThreads = 4, kPer = 200;
  {
    auto j = Open();
    std::vector<std::thread> threads;
    std::atomic<int> failures{0};
    for (int t = 0; t < kThreads; ++t) {
      threads.emplace_back([&, t] {
        for (int i = 0; i < kPer; ++i) {
          std::promise<Status> done;
          auto f = done.get_future();
          j->Append("t" + std::to_string(t) + ":" + std::to_string(i) + std::string(i % 37, 'x'),
                    [&done](Status st, uint64_t) { done.set_value(st); });
          if (!f.get().ok()) ++failures;
        }
      });
    }
    for (auto& th : threads) th.join();
    EXPECT_EQ(failures.load(), 0);
    const auto stats = j->GetStats();
    EXPECT_EQ(stats.records, static_cast<uint64_t>(kThreads * kPer));
    EXPECT_LE(stats.syncs, stats.records);
  }  // nothing released: all of it stays
  auto j = Open();
  auto left = j->ReadLeftovers();
  ASSERT_TRUE(left.ok());
  ASSERT_EQ(left->size(), static_cast<size_t>(kThreads * kPer));
  // Each thread's records come back in the order it appended them.
  std::map<std::string, int> next;
  for (const auto& rec : *left) {
    const auto colon = rec.find(':');
    const std::string thread = rec.substr(0, colon);
    const int i = std::stoi(rec.substr(colon + 1));
    EXPECT_EQ(i, next[thread]++) << rec;
    EXPECT_EQ(rec.size(), colon + 1 + std::to_string(i).size() + static_cast<size_t>(i % 37));
  }
  ASSERT_TRUE(j->DropLeftovers().ok());
  EXPECT_TRUE(Files().empty());
  j.reset();
  EXPECT_TRUE(Leftovers().empty());
}

// With no write in progress, the caller writes its record itself (no hand-off); appends that do
// not wait, from several threads, are each answered exactly once, numbers increasing in append
// order, some in groups written by the journal's thread.
TEST_F(IntakeJournalTest, CallersWriteWhenIdleAndEveryAppendIsAnsweredOnce) {
  auto j = Open();
  std::thread::id answered_on;
  j->Append("alone", [&](Status st, uint64_t) {
    EXPECT_TRUE(st.ok());
    answered_on = std::this_thread::get_id();
  });
  EXPECT_EQ(answered_on, std::this_thread::get_id());  // answered before Append returned

  constexpr int kThreads = 4, kPer = 500;
  std::mutex mu;
  std::condition_variable cv;
  std::vector<int> answers(kThreads * kPer, 0);
  std::vector<uint64_t> numbers(kThreads * kPer, 0);
  int total = 0;
  std::atomic<bool> go{false};  // all threads append at once, so their records share groups
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      while (!go.load()) std::this_thread::yield();
      for (int i = 0; i < kPer; ++i) {
        const int k = t * kPer + i;
        j->Append(std::to_string(k), [&, k](Status st, uint64_t n) {
          std::lock_guard<std::mutex> lock(mu);
          EXPECT_TRUE(st.ok());
          ++answers[k];
          numbers[k] = n;
          ++total;
          cv.notify_all();
        });
      }
    });
  }
  go = true;
  for (auto& th : threads) th.join();
  {
    std::unique_lock<std::mutex> lock(mu);
    ASSERT_TRUE(
        cv.wait_for(lock, std::chrono::seconds(20), [&] { return total == kThreads * kPer; }));
  }
  for (int k = 0; k < kThreads * kPer; ++k) EXPECT_EQ(answers[k], 1) << k;
  for (int t = 0; t < kThreads; ++t) {
    for (int i = 1; i < kPer; ++i) EXPECT_LT(numbers[t * kPer + i - 1], numbers[t * kPer + i]);
  }
  const auto stats = j->GetStats();
  EXPECT_EQ(stats.records, static_cast<uint64_t>(kThreads * kPer + 1));
  EXPECT_LT(stats.syncs, stats.records);  // grouped
  j.reset();
  EXPECT_EQ(Leftovers().size(), static_cast<size_t>(kThreads * kPer + 1));
}

TEST_F(IntakeJournalTest, ReleasedRecordsLeaveNoFiles) {
  {
    auto j = Open(/*segment_bytes=*/256);
    std::vector<uint64_t> numbers;
    for (int i = 0; i < 100; ++i) numbers.push_back(AppendSync(*j, std::string(40, 'a' + i % 26)));
    EXPECT_GT(j->GetStats().live_files, 5u);  // ~5 records per 256-byte file
    for (size_t i = 0; i < 60; ++i) j->Release(numbers[i]);
    // Files whose records are all released are gone while the journal runs.
    const size_t live = j->GetStats().live_files;
    EXPECT_LT(live, 10u);
    EXPECT_EQ(Files().size(), live);
    for (size_t i = 60; i < 100; ++i) j->Release(numbers[i]);
  }
  EXPECT_TRUE(Files().empty());
}

TEST_F(IntakeJournalTest, UnreleasedRecordsOfLaterFilesSurvive) {
  std::vector<std::string> kept;
  {
    auto j = Open(/*segment_bytes=*/256);
    for (int i = 0; i < 100; ++i) {
      std::string payload = "rec" + std::to_string(i);
      const uint64_t n = AppendSync(*j, payload);
      if (i < 70) {
        j->Release(n);
      } else {
        kept.push_back(payload);
      }
    }
  }
  const auto left = Leftovers();
  // The unreleased ones, in order, possibly after released ones that shared their file.
  ASSERT_GE(left.size(), kept.size());
  EXPECT_LT(left.size(), kept.size() + 40);
  EXPECT_TRUE(std::equal(kept.begin(), kept.end(), left.end() - kept.size()));
}

TEST_F(IntakeJournalTest, NewFilesAfterReopenDoNotClashWithLeftovers) {
  {
    auto j = Open();
    AppendSync(*j, "old");
  }
  {
    auto j = Open();
    AppendSync(*j, "new");  // the earlier file is not dropped yet
  }
  EXPECT_EQ(Files().size(), 2u);
  const auto left = Leftovers();
  EXPECT_EQ(left, (std::vector<std::string>{"old", "new"}));
}

TEST_F(IntakeJournalTest, TornTailEndsTheFileRecords) {
  {
    auto j = Open();
    for (int i = 0; i < 5; ++i) AppendSync(*j, "record-" + std::to_string(i));
  }
  ASSERT_EQ(Files().size(), 1u);
  const fs::path file = Files()[0];
  // Cut the last record short, as a crash mid-write would.
  fs::resize_file(file, fs::file_size(file) - 3);
  auto left = Leftovers();
  EXPECT_EQ(left.size(), 4u);
  EXPECT_EQ(left.back(), "record-3");
  // A trailing header that promises more than the file holds ends it too.
  {
    std::ofstream out(file, std::ios::binary | std::ios::app);
    out.write("\xff\xff\x00\x00\x01\x02\x03\x04", 8);
  }
  EXPECT_EQ(Leftovers().size(), 4u);
}

TEST_F(IntakeJournalTest, CorruptRecordEndsTheFileRecords) {
  {
    auto j = Open();
    for (int i = 0; i < 5; ++i) AppendSync(*j, "record-" + std::to_string(i));
  }
  const fs::path file = Files()[0];
  // Flip one byte of the third record's payload (each record is 8 + 8 bytes).
  {
    std::fstream f(file, std::ios::binary | std::ios::in | std::ios::out);
    f.seekp(2 * 16 + 8 + 2);
    f.put('X');
  }
  const auto left = Leftovers();
  EXPECT_EQ(left, (std::vector<std::string>{"record-0", "record-1"}));
}

// Property: whatever happens to a journal file after it was written (cut anywhere, a byte
// changed anywhere, garbage appended), reading it back never fails or crashes and yields a prefix
// of the records written, all of them when only garbage was appended.
TEST_F(IntakeJournalTest, DamagedFilesReadBackAPrefix) {
  std::mt19937 rng(7);
  std::vector<std::string> written;
  {
    auto j = Open();
    for (int i = 0; i < 40; ++i) {
      std::string payload(rng() % 300, '\0');
      for (char& c : payload) c = static_cast<char>(rng() % 256);
      written.push_back(payload);
      AppendSync(*j, payload);
    }
  }
  ASSERT_EQ(Files().size(), 1u);
  const fs::path file = Files()[0];
  std::string original;
  {
    std::ifstream in(file, std::ios::binary);
    original.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  }
  for (int trial = 0; trial < 300; ++trial) {
    std::string damaged = original;
    const int kind = trial % 3;
    if (kind == 0) {
      damaged.resize(rng() % (original.size() + 1));
    } else if (kind == 1) {
      damaged[rng() % damaged.size()] ^= static_cast<char>(1 + rng() % 255);
    } else {
      for (int k = 0, n = 1 + rng() % 64; k < n; ++k) damaged.push_back(static_cast<char>(rng()));
    }
    {
      std::ofstream out(file, std::ios::binary | std::ios::trunc);
      out.write(damaged.data(), static_cast<std::streamsize>(damaged.size()));
    }
    auto j = IntakeJournal::Open({.dir = dir_});
    ASSERT_TRUE(j.ok());
    auto left = (*j)->ReadLeftovers();
    ASSERT_TRUE(left.ok()) << left.status().ToString();
    ASSERT_LE(left->size(), written.size());
    EXPECT_TRUE(std::equal(left->begin(), left->end(), written.begin())) << "trial " << trial;
    if (kind == 2) {
      EXPECT_EQ(left->size(), written.size()) << "trial " << trial;
    }
    j->reset();
    // Only the damaged file: the journal opened above made none (nothing was appended).
    ASSERT_EQ(Files().size(), 1u);
  }
}

TEST_F(IntakeJournalTest, TooLargeRecordIsRefusedAtOnce) {
  auto j = IntakeJournal::Open({.dir = dir_, .max_record_bytes = 16});
  ASSERT_TRUE(j.ok());
  Status got = Status::Internal("not called");
  uint64_t n = 0;
  (*j)->Append(std::string(17, 'x'), [&](Status st, uint64_t number) {
    got = st;
    n = number;
  });
  EXPECT_EQ(n, IntakeJournal::kNoRecord);
  EXPECT_EQ(got.code(), StatusCode::kInvalidParameter);
  EXPECT_NE(AppendSync(**j, std::string(16, 'x')), IntakeJournal::kNoRecord);
  // After Stop: refused, and records already appended can still be released.
  const uint64_t last = AppendSync(**j, "last");
  (*j)->Stop();
  (*j)->Append("late", [&](Status st, uint64_t) { got = st; });
  EXPECT_EQ(got.code(), StatusCode::kUnavailable);
  (*j)->Release(last);
}

// Injected file failures: the journal's writes and syncs fail with `err` while it is set. A failing
// write first writes half of what it was given, as a disk filling up midway would. Time is a
// FakeClock: a backoff ends when the test advances it.
class FailingFiles {
 public:
  std::atomic<int> write_err{0};
  std::atomic<int> sync_err{0};
  std::atomic<int> failed_writes{0};  // writes that failed (appends' groups and probes)
  FakeClock clock;

  IntakeJournalOptions Options(const std::string& dir) {
    IntakeJournalOptions o;
    o.dir = dir;
    o.retry_initial = std::chrono::milliseconds(10);
    o.retry_max = std::chrono::milliseconds(40);
    o.clock = &clock;
    o.write_fn = [this](int fd, const void* data, size_t size) -> ssize_t {
      if (const int err = write_err.load(); err != 0) {
        if (size > 1) (void)::write(fd, data, size / 2);
        ++failed_writes;
        errno = err;
        return -1;
      }
      return ::write(fd, data, size);
    };
    o.fdatasync_fn = [this](int fd) {
      if (const int err = sync_err.load(); err != 0) {
        errno = err;
        return -1;
      }
      return ::fdatasync(fd);
    };
    return o;
  }
};

std::pair<Status, uint64_t> AppendWait(IntakeJournal& j, std::string payload) {
  std::promise<std::pair<Status, uint64_t>> done;
  auto f = done.get_future();
  j.Append(std::move(payload), [&done](Status st, uint64_t n) { done.set_value({st, n}); });
  return f.get();
}

// Waits (10 s at most, in real time) for the journal's thread to make `ready` true.
bool Eventually(const std::function<bool()>& ready) {
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (!ready()) {
    if (std::chrono::steady_clock::now() > until) return false;
    std::this_thread::yield();
  }
  return true;
}

// Waits for the journal to report healthy while time passes, 10 ms of the fake clock per look:
// its thread probes once each backoff has passed.
bool HealthyAsTimePasses(IntakeJournal& j, FakeClock& clock) {
  return Eventually([&] {
    if (j.Health().ok()) return true;
    clock.Advance(std::chrono::milliseconds(10));
    return false;
  });
}

TEST_F(IntakeJournalTest, OutOfSpaceIsRefusedThenWrittenToAFreshFile) {
  FailingFiles files;
  auto j = IntakeJournal::Open(files.Options(dir_));
  ASSERT_TRUE(j.ok());
  ASSERT_TRUE(AppendWait(**j, "before").first.ok());
  ASSERT_TRUE((*j)->Health().ok());

  files.write_err = ENOSPC;
  auto [torn, torn_number] = AppendWait(**j, "torn by a full disk");
  EXPECT_EQ(torn.code(), StatusCode::kUnavailable);
  EXPECT_EQ(torn_number, IntakeJournal::kNoRecord);
  EXPECT_EQ((*j)->Health().code(), StatusCode::kUnavailable);
  // Refused at once during the backoff, without a write.
  EXPECT_EQ(AppendWait(**j, "refused").first.code(), StatusCode::kUnavailable);
  EXPECT_EQ(files.failed_writes, 1);
  // Once the backoff has passed the journal's thread probes, finds no room, and backs off again.
  files.clock.Advance(std::chrono::milliseconds(10));
  ASSERT_TRUE(Eventually([&] { return files.failed_writes >= 2; }));
  EXPECT_FALSE((*j)->Health().ok());

  files.write_err = 0;  // space freed: the next probe (after the doubled backoff) finds room
  ASSERT_TRUE(HealthyAsTimePasses(**j, files.clock));
  auto [after, after_number] = AppendWait(**j, "after");
  ASSERT_TRUE(after.ok()) << after.ToString();
  EXPECT_NE(after_number, IntakeJournal::kNoRecord);
  EXPECT_GE(Files().size(), 2u) << "the record after the failure goes to a fresh file";
  j->reset();
  // Only what was acknowledged comes back: the torn half-record is cut off its file.
  EXPECT_EQ(Leftovers(), (std::vector<std::string>{"before", "after"}));
}

TEST_F(IntakeJournalTest, FailedSyncIsNeverAcknowledgedNorReadBack) {
  // The write succeeds and the sync fails: the record's bytes may be complete in the file, yet
  // it was not acknowledged, so it must not be read back after a crash.
  FailingFiles files;
  auto j = IntakeJournal::Open(files.Options(dir_));
  ASSERT_TRUE(j.ok());
  ASSERT_TRUE(AppendWait(**j, "one").first.ok());
  files.sync_err = ENOSPC;
  EXPECT_EQ(AppendWait(**j, "unsynced").first.code(), StatusCode::kUnavailable);
  files.sync_err = 0;
  ASSERT_TRUE(HealthyAsTimePasses(**j, files.clock));
  ASSERT_TRUE(AppendWait(**j, "two").first.ok());
  j->reset();
  EXPECT_EQ(Leftovers(), (std::vector<std::string>{"one", "two"}));
}

TEST_F(IntakeJournalTest, AppendAfterTheBackoffRetriesWithoutWaitingForTheProbe) {
  FailingFiles files;
  IntakeJournalOptions o = files.Options(dir_);
  o.retry_initial = o.retry_max = std::chrono::milliseconds(30);
  auto j = IntakeJournal::Open(std::move(o));
  ASSERT_TRUE(j.ok());
  files.write_err = EDQUOT;
  EXPECT_EQ(AppendWait(**j, "over quota").first.code(), StatusCode::kUnavailable);
  files.write_err = 0;
  EXPECT_EQ(AppendWait(**j, "within the backoff").first.code(), StatusCode::kUnavailable);
  files.clock.Advance(std::chrono::milliseconds(30));
  auto [st, n] = AppendWait(**j, "retried");
  EXPECT_TRUE(st.ok()) << st.ToString();
  EXPECT_TRUE((*j)->Health().ok());
  (*j)->Release(n);
}

TEST_F(IntakeJournalTest, OtherWriteErrorsStayFatal) {
  FailingFiles files;
  auto j = IntakeJournal::Open(files.Options(dir_));
  ASSERT_TRUE(j.ok());
  ASSERT_TRUE(AppendWait(**j, "kept").first.ok());
  files.sync_err = EIO;
  EXPECT_EQ(AppendWait(**j, "lost").first.code(), StatusCode::kUnavailable);
  files.sync_err = 0;
  files.clock.Advance(std::chrono::seconds(10));  // past any backoff: there is none to wait out
  EXPECT_EQ(AppendWait(**j, "still refused").first.code(), StatusCode::kUnavailable);
  EXPECT_NE((*j)->Health().message().find("until a restart"), std::string::npos);
  j->reset();
  EXPECT_EQ(Leftovers(), (std::vector<std::string>{"kept"}));
}

TEST_F(IntakeJournalTest, MissingDirectoryIsAnError) {
  auto j = IntakeJournal::Open({.dir = dir_ + "/missing"});
  EXPECT_FALSE(j.ok());
}

}  // namespace
}  // namespace engram
