// StoreBackendTest: runs a store test against every backend. The parameter is "sqlite" (a database
// file in a temporary directory) or "postgres" (a fresh database on the throw-away test cluster;
// the test skips with a message when no cluster is configured, see pg_test_db.h).
//
//   class MyTest : public engram::testing::StoreBackendTest {};
//   TEST_P(MyTest, Something) { auto store = OpenStore(); ... }
//   ENGRAM_INSTANTIATE_STORE_BACKENDS(MyTest);
//
// OpenStore() may be called again to get a second Store on the same data: a restart (after the
// first one is destroyed) or, on PostgreSQL, a second node beside the first.
#pragma once

#include <gtest/gtest.h>
#include <stdlib.h>

#include <chrono>
#include <filesystem>
#include <memory>
#include <string>
#include <thread>

#include "pg_test_db.h"
#include "store/pg_store.h"
#include "store/sqlite_store.h"

namespace engram::testing {

class StoreBackendTest : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    if (backend() == "postgres") {
      pg_ = PgTestDatabase::Create();
      if (!pg_) GTEST_SKIP() << PgTestDatabase::kSkipMessage;
    } else {
      char tmpl[] = "/tmp/engram-store-XXXXXX";
      dir_ = mkdtemp(tmpl);
    }
  }
  void TearDown() override {
    if (!dir_.empty()) std::filesystem::remove_all(dir_);
  }

  const std::string& backend() const { return GetParam(); }
  // SQLite: the directory holding the database file (empty on PostgreSQL).
  const std::string& data_dir() const { return dir_; }
  bool is_postgres() const { return backend() == "postgres"; }
  // PostgreSQL: the test database's URL, for writing rows behind the store's back (empty on
  // SQLite).
  std::string pg_url() const { return pg_ ? pg_->url() : std::string(); }

  // PostgreSQL: ends every job lease now, as if the lease time had passed, so that the jobs of a
  // closed node go to the next node that asks (instead of sleeping through the lease). Nothing
  // on SQLite, which has no leases.
  void ExpireLeases() {
    if (!is_postgres()) return;
    pqxx::connection conn(pg_url());
    pqxx::nontransaction txn(conn);
    for (const char* table : {"memory_events", "skill_tasks", "kb_docs"}) {
      txn.exec(std::string("UPDATE ") + table + " SET lease_until = 0");
    }
  }

  // `pg` sets the PostgreSQL options other than the URL (node id, lease); SQLite ignores it.
  std::unique_ptr<Store> OpenStore(PgStoreOptions pg = {}) {
    if (is_postgres()) {
      pg.url = pg_->url();
      auto s = PgStore::Open(std::move(pg));
      EXPECT_TRUE(s.ok()) << s.status().ToString();
      return s.ok() ? std::unique_ptr<Store>(std::move(s).value()) : nullptr;
    }
    auto s =
        SqliteStore::Open({.path = dir_ + "/engram.db", .intake_journal_dir = dir_ + "/intake"});
    EXPECT_TRUE(s.ok()) << s.status().ToString();
    return s.ok() ? std::unique_ptr<Store>(std::move(s).value()) : nullptr;
  }

 private:
  std::string dir_;
  std::unique_ptr<PgTestDatabase> pg_;
};

// A StoreBackendTest with one store opened for each test (store_) and short job leases, for the
// job-queue tests: Restart() closes the store and opens it again the way a restarted node would
// (on PostgreSQL the closed node's jobs stay its own until the lease runs out: ExpireLeases()
// makes that now).
class LeasedStoreTest : public StoreBackendTest {
 protected:
  static constexpr std::chrono::milliseconds kLease{150};

  void SetUp() override {
    StoreBackendTest::SetUp();
    if (IsSkipped()) return;
    store_ = Open();
    ASSERT_NE(store_, nullptr);
  }
  void TearDown() override {
    store_.reset();
    StoreBackendTest::TearDown();
  }

  std::unique_ptr<Store> Open(std::string node_id = "") {
    return OpenStore({.node_id = std::move(node_id), .lease = kLease});
  }

  // False (and store_ null) when the store did not open again.
  bool Restart() {
    store_.reset();
    ExpireLeases();
    store_ = Open();
    return store_ != nullptr;
  }

  std::unique_ptr<Store> store_;
};

}  // namespace engram::testing

#define ENGRAM_INSTANTIATE_STORE_BACKENDS(fixture)                \
  INSTANTIATE_TEST_SUITE_P(                                       \
      Backends, fixture, ::testing::Values("sqlite", "postgres"), \
      [](const ::testing::TestParamInfo<std::string>& info) { return info.param; })
