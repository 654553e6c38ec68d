// PostgreSQL that stops taking writes, for real: the test's database is made read-only
// (`default_transaction_read_only`, its sessions terminated, as when a primary is demoted to a
// standby behind the same address). While that lasts, writes answer 503 in the documented
// envelope and store nothing, reads still answer, and health says unhealthy; once the database
// takes writes again, health recovers and writes succeed within seconds, without a restart.
// Skips without a test cluster (ENGRAM_TEST_PG_URL; scripts/test.sh starts one).
#include <chrono>
#include <pqxx/pqxx>
#include <thread>

#include "memory_client.h"
#include "pg_test_db.h"
#include "test_util.h"

namespace engram::testing {
namespace {

using nlohmann::json;
using namespace std::chrono_literals;

const std::string kV3Health = "/v3/openapi/workspaces/default/memory/agentic-memory/health";

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
  bool Finds(const std::string& user, const std::string& word) {
    for (const json& m : SearchMemories(*client_, {{"query", word}, {"user_id", user}})) {
      if (m.value("memory", "").find(word) != std::string::npos) return true;
    }
    return false;
  }
  // Health as /healthz and the V3 health route see it: true only if both agree on `want`.
  bool Healthy(bool want) {
    HttpResponse z = client_->Get("/healthz");
    HttpResponse v3 = client_->Get(kV3Health);
    const int code = want ? 200 : 503;
    return z.status == code && v3.status == code &&
           v3.body.find(want ? "\"healthy\"" : "\"unhealthy\"") != std::string::npos;
  }
  template <typename Fn>
  static bool Within(std::chrono::milliseconds limit, Fn&& fn) {
    const auto deadline = std::chrono::steady_clock::now() + limit;
    while (std::chrono::steady_clock::now() < deadline) {
      if (fn()) return true;
      std::this_thread::sleep_for(50ms);
    }
    return fn();
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
  ASSERT_TRUE(Healthy(true));

  SetReadOnly(true);
  // The probe writes nothing, yet sees what a write would: unhealthy.
  EXPECT_TRUE(Within(10s, [&] { return Healthy(false); }));
  const std::string refused = UniqueWord();
  for (int i = 0; i < 3; ++i) {
    HttpResponse r = Add(user, "Sent during the fault: " + refused);
    EXPECT_EQ(r.status, 503) << r.Describe();
    // The documented envelope, not a bare error.
    EXPECT_TRUE(r.Json().is_object() && r.Json().contains("code")) << r.Describe();
  }
  // Reads go on.
  EXPECT_TRUE(Finds(user, before));
  EXPECT_TRUE(Healthy(false));

  SetReadOnly(false);
  // Health and writes recover on their own: the pool replaced the read-only sessions.
  EXPECT_TRUE(Within(10s, [&] { return Healthy(true); }));
  const std::string after = UniqueWord();
  HttpResponse r;
  EXPECT_TRUE(Within(10s, [&] {
    return (r = Add(user, "Sent after the fault: " + after)).status == 200;
  })) << r.Describe();
  if (r.status == 200) {
    const json done = WaitMemoryEvent(*client_, r.Json().value("event_id", ""));
    EXPECT_EQ(done.is_object() ? done.value("status", "") : "", "SUCCEEDED") << done.dump();
  }
  EXPECT_TRUE(Finds(user, after));
  EXPECT_TRUE(Finds(user, before));
  // What was refused was not stored.
  EXPECT_FALSE(Finds(user, refused));
}

}  // namespace
}  // namespace engram::testing
