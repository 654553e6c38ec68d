// How a SQLite store may be opened beside another process's: the lock that keeps a second writer
// out, and the read-only store that reads beside a writer (engram export).
#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>

#include "memory_records.h"
#include "store/sqlite_store.h"

namespace engram {
namespace {

class SqliteOpenTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/engram-open-XXXXXX";
    dir_ = mkdtemp(tmpl);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  SqliteStoreOptions Writable() const {
    return {.path = dir_ + "/engram.db", .lock_file = dir_ + "/engram.lock"};
  }

  std::string dir_;
};

TEST_F(SqliteOpenTest, ASecondWriterIsRefusedWhileTheFirstHoldsTheLock) {
  auto first = SqliteStore::Open(Writable());
  ASSERT_TRUE(first.ok()) << first.status().ToString();
  auto second = SqliteStore::Open(Writable());
  ASSERT_FALSE(second.ok());
  EXPECT_EQ(second.status().code(), StatusCode::kUnavailable);
  EXPECT_NE(second.status().message().find("in use by another Engram process"), std::string::npos)
      << second.status().message();
  first->reset();
  auto third = SqliteStore::Open(Writable());
  EXPECT_TRUE(third.ok()) << third.status().ToString();
}

TEST_F(SqliteOpenTest, AReadOnlyStoreReadsBesideAWriterAndWritesNothing) {
  auto writer = SqliteStore::Open(Writable());
  ASSERT_TRUE(writer.ok()) << writer.status().ToString();
  ASSERT_TRUE(testing::AddTestMemory(**writer, "alice", "before").ok());

  auto reader = SqliteStore::Open({.path = dir_ + "/engram.db", .read_only = true});
  ASSERT_TRUE(reader.ok()) << reader.status().ToString();
  EXPECT_EQ(testing::ScopeTexts(**reader, "alice"), std::vector<std::string>{"before"});
  // A commit after the reader opened is seen by its next read: the file is not read as
  // immutable while a writer has it open.
  ASSERT_TRUE(testing::AddTestMemory(**writer, "alice", "after").ok());
  EXPECT_EQ(testing::ScopeTexts(**reader, "alice"), (std::vector<std::string>{"before", "after"}));
  Status write = testing::AddTestMemory(**reader, "alice", "refused");
  EXPECT_EQ(write.code(), StatusCode::kUnavailable) << write.ToString();
}

TEST_F(SqliteOpenTest, AReadOnlyStoreReadsAClosedDatabase) {
  {
    auto writer = SqliteStore::Open(Writable());
    ASSERT_TRUE(writer.ok()) << writer.status().ToString();
    ASSERT_TRUE(testing::AddTestMemory(**writer, "alice", "kept").ok());
  }
  auto reader = SqliteStore::Open({.path = dir_ + "/engram.db", .read_only = true});
  ASSERT_TRUE(reader.ok()) << reader.status().ToString();
  EXPECT_EQ(testing::ScopeTexts(**reader, "alice"), std::vector<std::string>{"kept"});
}

}  // namespace
}  // namespace engram
