// PgTestDatabase: a fresh, empty PostgreSQL database for one test, on the throw-away cluster that
// scripts/pg_test_cluster.sh starts (scripts/test.sh starts one for the whole run). Dropped again
// when the object goes away. Without ENGRAM_TEST_PG_URL, Create() returns nullopt and the test
// skips.
//
// Thread-safety: one object per test; not shared.
#pragma once

#include <cstdlib>
#include <memory>
#include <optional>
#include <pqxx/pqxx>
#include <random>
#include <string>

namespace engram::testing {

class PgTestDatabase {
 public:
  // The message a test prints when it skips for want of a cluster.
  static constexpr const char* kSkipMessage =
      "ENGRAM_TEST_PG_URL is not set: start a cluster with scripts/pg_test_cluster.sh "
      "(scripts/test.sh does)";

  static std::unique_ptr<PgTestDatabase> Create() {
    const char* base = std::getenv("ENGRAM_TEST_PG_URL");
    if (base == nullptr || *base == '\0') return nullptr;
    std::random_device rd;
    std::string name = "engram_test_" + std::to_string(rd()) + std::to_string(rd());
    pqxx::connection admin(std::string(base) + "/postgres");
    pqxx::nontransaction txn(admin);
    txn.exec("CREATE DATABASE " + name);
    return std::unique_ptr<PgTestDatabase>(new PgTestDatabase(base, name));
  }

  ~PgTestDatabase() {
    try {
      pqxx::connection admin(base_ + "/postgres");
      pqxx::nontransaction txn(admin);
      txn.exec("DROP DATABASE IF EXISTS " + name_ + " WITH (FORCE)");
    } catch (const std::exception&) {
      // The cluster is thrown away at the end of the run anyway.
    }
  }

  // The libpq URL of this test's database.
  std::string url() const { return base_ + "/" + name_; }
  // Its name (for ALTER DATABASE).
  const std::string& name() const { return name_; }

 private:
  PgTestDatabase(std::string base, std::string name)
      : base_(std::move(base)), name_(std::move(name)) {}
  std::string base_;
  std::string name_;
};

}  // namespace engram::testing
