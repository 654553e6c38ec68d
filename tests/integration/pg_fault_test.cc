// PostgreSQL that stops taking writes, for real: the test's database is made read-only
// (`default_transaction_read_only`, its sessions terminated, as when a primary is demoted to a
// standby behind the same address). While that lasts, writes answer 503 in the documented
// envelope and store nothing, reads still answer, and health says unhealthy; once the database
// takes writes again, health recovers and writes succeed within seconds, without a restart.
// Skips without a test cluster (ENGRAM_TEST_PG_URL; scripts/test.sh starts one).
#include <chrono>
#include <pqxx/pqxx>

#include "memory_client.h"
#include "pg_test_db.h"
#include "test_util.h"

namespace engram::testing {
namespace {

using nlohmann::json;
using namespace std::chrono_literals;

class PgFaultTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ENGRAM_REQUIRE_BINARY();
    db_ = PgTestDatabase::Create();
    if (!db_) GTEST_SKIP() << PgTestDatabase::kSkipMessage;
    server_ = std::make_unique<ServerProcess>(
        ServerOptions{.extra_args = {"--store-url", db_->url(), "--store-connections", "4"}});
    ASSERT_TRUE(server_->Start());
    client_ = std::make_unique<HttpClient>(server_->BaseUrl());
  }

  // Makes the database refuse writes (every new session read-only, the present ones ended) or
  // take them again; the administrator's own session stays writable.
  void SetReadOnly(bool on) {
    pqxx::connection admin(db_->url());
    pqxx::nontransaction txn(admin);
    txn.exec("SET default_transaction_read_only = off");
    txn.exec(
        "ALTER DATABASE " + db_->name() +
        (on ? " SET default_transaction_read_only = on" : " RESET default_transaction_read_only"));
    if (on) {
      txn.exec(
          "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
          "WHERE datname = current_database() AND pid <> pg_backend_pid()");
    }
  }

  HttpResponse Add(const std::string& user, const std::string& text) {
    return client_->Post(MemoryPrefix() + "/memories/add",
                         {{"messages", text}, {"user_id", user}, {"infer", false}});
  }
  std::unique_ptr<PgTestDatabase> db_;
  std::unique_ptr<ServerProcess> server_;
  std::unique_ptr<HttpClient> client_;
};

TEST_F(PgFaultTest, AReadOnlyDatabaseRefusesWritesWith503AndRecoversWithoutARestart) {
  const std::string user = UniqueId("pg-fault-user");
  const std::string before = UniqueWord();
  json event = AddMemoriesAndWait(
      *client_,
      {{"messages", "Stored before the fault: " + before}, {"user_id", user}, {"infer", false}});
  ASSERT_EQ(event.value("status", ""), "SUCCEEDED") << event.dump();
  ASSERT_TRUE(HealthIs(*client_, true));

  SetReadOnly(true);
  // The probe writes nothing, yet sees what a write would: unhealthy.
  EXPECT_TRUE(Within(10s, [&] { return HealthIs(*client_, false); })) << HealthIs(*client_, false);
  const std::string refused = UniqueWord();
  for (int i = 0; i < 3; ++i) {
    HttpResponse r = Add(user, "Sent during the fault: " + refused);
    EXPECT_EQ(r.status, 503) << r.Describe();
    // The documented envelope, not a bare error.
    EXPECT_TRUE(r.Json().is_object() && r.Json().contains("code")) << r.Describe();
  }
  // Reads go on.
  EXPECT_TRUE(FindsMemory(*client_, user, before));
  EXPECT_TRUE(HealthIs(*client_, false));

  SetReadOnly(false);
  // Health and writes recover on their own: the pool replaced the read-only sessions.
  EXPECT_TRUE(Within(10s, [&] { return HealthIs(*client_, true); })) << HealthIs(*client_, true);
  const std::string after = UniqueWord();
  HttpResponse r;
  EXPECT_TRUE(Within(10s, [&] {
    return (r = Add(user, "Sent after the fault: " + after)).status == 200;
  })) << r.Describe();
  if (r.status == 200) {
    const json done = WaitMemoryEvent(*client_, r.Json().value("event_id", ""));
    EXPECT_EQ(done.is_object() ? done.value("status", "") : "", "SUCCEEDED") << done.dump();
  }
  EXPECT_TRUE(FindsMemory(*client_, user, after));
  EXPECT_TRUE(FindsMemory(*client_, user, before));
  // What was refused was not stored.
  EXPECT_FALSE(FindsMemory(*client_, user, refused));
}

}  // namespace
}  // namespace engram::testing
