// Backup and restore of a SQLite data directory (sqlite_backup.h): a backup taken while a writer
// commits holds every write acknowledged before it began and is one point in time (its manifest's
// row counts are the restored database's); the intake journal's unreleased records travel with
// it; a damaged, newer or foreign backup is refused, and so is a destination or data directory
// that is not empty, with nothing left behind.
#include "store/sqlite_backup.h"

#include <gtest/gtest.h>
#include <stdlib.h>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <future>
#include <string>
#include <thread>
#include <vector>

#include "memory_records.h"
#include "store/intake_journal.h"
#include "store/migrations.h"
#include "store/sqlite_store.h"

namespace engram {
namespace {

namespace fs = std::filesystem;

class SqliteBackupTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/engram-backup-XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    root_ = tmpl;
    data_ = root_ / "data";
    fs::create_directories(data_);
  }
  void TearDown() override {
    store_.reset();
    fs::remove_all(root_);
  }

  static std::unique_ptr<SqliteStore> OpenStore(const fs::path& dir) {
    auto s = SqliteStore::Open({.path = (dir / "engram.db").string()});
    EXPECT_TRUE(s.ok()) << s.status().ToString();
    return s.ok() ? std::move(*s) : nullptr;
  }

  Result<BackupManifest> Backup(const fs::path& dest) {
    return BackupSqliteDataDir(
        {.data_dir = data_.string(), .dest = dest.string(), .engram_version = "test"});
  }
  Result<BackupManifest> Restore(const fs::path& source, const fs::path& data_dir) {
    return RestoreSqliteDataDir({.source = source.string(),
                                 .data_dir = data_dir.string(),
                                 .max_schema_version = SqliteMigrations().back().version});
  }

  fs::path root_, data_;
  std::unique_ptr<SqliteStore> store_;
};

TEST_F(SqliteBackupTest, TakenWhileWritesCommitItHoldsEveryEarlierWriteAtOnePointInTime) {
  store_ = OpenStore(data_);
  ASSERT_NE(store_, nullptr);
  for (int i = 0; i < 50; ++i)
    ASSERT_TRUE(testing::AddTestMemory(*store_, "before", "before " + std::to_string(i)).ok());

  // A writer commits throughout the backup.
  std::atomic<bool> stop{false};
  std::atomic<int> during{0};
  std::thread writer([&] {
    while (!stop) {
      if (testing::AddTestMemory(*store_, "during", "during " + std::to_string(during.load())).ok())
        ++during;
    }
  });
  while (during < 20) std::this_thread::yield();
  auto manifest = Backup(root_ / "backup");
  stop = true;
  writer.join();
  ASSERT_TRUE(manifest.ok()) << manifest.status().ToString();
  EXPECT_EQ(manifest->schema_version, SqliteMigrations().back().version);
  EXPECT_EQ(manifest->engram_version, "test");
  ASSERT_FALSE(manifest->files.empty());
  EXPECT_EQ(manifest->files[0].path, "engram.db");
  EXPECT_GE(manifest->rows.at("memories"), 70);
  EXPECT_TRUE(fs::exists(root_ / "backup" / "manifest.json"));
  EXPECT_FALSE(fs::exists(root_ / "backup" / "engram.db-wal")) << "a backup is single files";

  auto verified = VerifyBackup((root_ / "backup").string());
  ASSERT_TRUE(verified.ok()) << verified.status().ToString();
  auto restored = Restore(root_ / "backup", root_ / "restored");
  ASSERT_TRUE(restored.ok()) << restored.status().ToString();

  auto copy = OpenStore(root_ / "restored");
  ASSERT_NE(copy, nullptr);
  EXPECT_EQ(testing::ScopeTexts(*copy, "before"), testing::ScopeTexts(*store_, "before"));
  // One point in time: the copy holds a prefix of the writes made during the backup, as many
  // as the manifest counted, and no more than were acknowledged.
  const std::vector<std::string> during_copy = testing::ScopeTexts(*copy, "during");
  EXPECT_EQ(static_cast<int64_t>(during_copy.size()) + 50, manifest->rows.at("memories"));
  EXPECT_GE(during_copy.size(), 20u);
  EXPECT_LE(static_cast<int>(during_copy.size()), during.load());
  std::vector<std::string> all_during = testing::ScopeTexts(*store_, "during");
  all_during.resize(during_copy.size());
  EXPECT_EQ(during_copy, all_during);
}

TEST_F(SqliteBackupTest, TheIntakeJournalsUnreleasedRecordsTravelWithTheBackup) {
  store_ = OpenStore(data_);
  ASSERT_NE(store_, nullptr);
  fs::create_directories(data_ / "intake");
  {
    auto journal = IntakeJournal::Open({.dir = (data_ / "intake").string()});
    ASSERT_TRUE(journal.ok()) << journal.status().ToString();
    std::promise<Status> appended;
    (*journal)->Append("an acknowledged event",
                       [&](Status st, uint64_t) { appended.set_value(st); });
    ASSERT_TRUE(appended.get_future().get().ok());
    (*journal)->Stop();  // never released: a crash before the event reached the database
  }
  std::ofstream(data_ / "intake" / "space-probe.tmp") << "not a record";

  auto manifest = Backup(root_ / "backup");
  ASSERT_TRUE(manifest.ok()) << manifest.status().ToString();
  ASSERT_EQ(manifest->files.size(), 2u);
  EXPECT_EQ(manifest->files[1].path.rfind("intake/intake-", 0), 0u) << manifest->files[1].path;
  ASSERT_TRUE(Restore(root_ / "backup", root_ / "restored").ok());

  auto journal = IntakeJournal::Open({.dir = (root_ / "restored" / "intake").string()});
  ASSERT_TRUE(journal.ok()) << journal.status().ToString();
  auto leftovers = (*journal)->ReadLeftovers();
  ASSERT_TRUE(leftovers.ok()) << leftovers.status().ToString();
  EXPECT_EQ(*leftovers, std::vector<std::string>{"an acknowledged event"});
  EXPECT_FALSE(fs::exists(root_ / "restored" / "intake" / "space-probe.tmp"));
}

TEST_F(SqliteBackupTest, RefusesADestinationThatIsNotEmptyAndLeavesNothingBehind) {
  store_ = OpenStore(data_);
  ASSERT_NE(store_, nullptr);
  fs::create_directories(root_ / "taken");
  std::ofstream(root_ / "taken" / "file") << "x";
  auto taken = Backup(root_ / "taken");
  EXPECT_EQ(taken.status().code(), StatusCode::kInvalidParameter);
  EXPECT_NE(taken.status().message().find("not an empty directory"), std::string::npos);

  auto missing = BackupSqliteDataDir(
      {.data_dir = (root_ / "nowhere").string(), .dest = (root_ / "b").string()});
  EXPECT_EQ(missing.status().code(), StatusCode::kNotFound);

  fs::create_directories(root_ / "empty");
  ASSERT_TRUE(Backup(root_ / "empty").ok()) << "an empty directory is a free destination";
  std::vector<std::string> names;
  for (const auto& e : fs::directory_iterator(root_)) names.push_back(e.path().filename().string());
  std::sort(names.begin(), names.end());
  EXPECT_EQ(names, (std::vector<std::string>{"data", "empty", "taken"})) << "no staging left";
}

TEST_F(SqliteBackupTest, RestoreRefusesADamagedBackupANewerSchemaAndAFullDataDirectory) {
  store_ = OpenStore(data_);
  ASSERT_NE(store_, nullptr);
  ASSERT_TRUE(testing::AddTestMemory(*store_, "u", "kept").ok());
  ASSERT_TRUE(Backup(root_ / "backup").ok());

  // A data directory that holds anything.
  auto full = Restore(root_ / "backup", data_);
  EXPECT_EQ(full.status().code(), StatusCode::kInvalidParameter);
  EXPECT_NE(full.status().message().find("not empty"), std::string::npos);

  // A newer schema than the binary's.
  auto newer = RestoreSqliteDataDir({.source = (root_ / "backup").string(),
                                     .data_dir = (root_ / "r1").string(),
                                     .max_schema_version = 1});
  EXPECT_EQ(newer.status().code(), StatusCode::kInvalidParameter);
  EXPECT_NE(newer.status().message().find("newer"), std::string::npos);
  EXPECT_FALSE(fs::exists(root_ / "r1" / "engram.db"));

  // One byte changed in the database.
  {
    std::fstream db(root_ / "backup" / "engram.db",
                    std::ios::in | std::ios::out | std::ios::binary);
    db.seekp(200);
    db.put('\x7f');
  }
  auto damaged = Restore(root_ / "backup", root_ / "r2");
  EXPECT_EQ(damaged.status().code(), StatusCode::kInvalidParameter);
  EXPECT_NE(damaged.status().message().find("damaged"), std::string::npos);
  EXPECT_FALSE(fs::exists(root_ / "r2" / "engram.db"));
}

TEST(BackupManifestTest, RoundTripsAndRefusesWhatIsNotABackup) {
  BackupManifest m;
  m.engram_version = "0.2.0";
  m.created_at = "2026-01-02T03:04:05.000000Z";
  m.schema_version = 7;
  m.files = {{.path = "engram.db", .bytes = 4096, .sha256 = std::string(64, 'a')},
             {.path = "intake/intake-3.log", .bytes = 10, .sha256 = std::string(64, 'b')}};
  m.rows = {{"memories", 3}, {"messages", 0}};
  auto back = BackupManifest::Parse(m.ToJson());
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ(back->ToJson(), m.ToJson());

  auto refused = [&](const std::string& from, const std::string& to) {
    std::string text = m.ToJson();
    const size_t at = text.find(from);
    EXPECT_NE(at, std::string::npos) << from;
    text.replace(at, from.size(), to);
    auto parsed = BackupManifest::Parse(text);
    EXPECT_EQ(parsed.status().code(), StatusCode::kInvalidParameter) << to;
    return parsed.status().message();
  };
  EXPECT_NE(refused("intake/intake-3.log", "../../etc/passwd").find("unexpected path"),
            std::string::npos);
  refused("intake/intake-3.log", "intake/../engram.db");
  refused("intake/intake-3.log", "engram.db");  // twice
  refused("\"engram-backup\"", "\"something-else\"");
  EXPECT_NE(refused("\"format_version\": 1", "\"format_version\": 2").find("newer"),
            std::string::npos);
  refused(std::string(64, 'a'), std::string(63, 'a') + "G");
  EXPECT_EQ(BackupManifest::Parse("[]").status().code(), StatusCode::kInvalidParameter);
  EXPECT_EQ(BackupManifest::Parse("{").status().code(), StatusCode::kInvalidParameter);
}

}  // namespace
}  // namespace engram
