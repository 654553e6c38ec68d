// The SQL store core's seam (sql_txn.h): the placeholder rendering for SQLite, and one statement
// text run through SqliteTxn and PgTxn with every kind of parameter, read back the same.
#include "store/sql_txn.h"

#include <gtest/gtest.h>
#include <sqlite3.h>

#include <cstring>
#include <memory>
#include <optional>
#include <pqxx/pqxx>

#include "store/pg_sql_txn.h"
#include "store/sqlite_sql_txn.h"
#include "store_backends.h"

namespace engram {
namespace {

TEST(RenderForSqliteTest, NumbersEachPlaceholder) {
  EXPECT_EQ(RenderForSqlite("SELECT a FROM t WHERE a = $1 AND b = $12"),
            "SELECT a FROM t WHERE a = ?1 AND b = ?12");
  EXPECT_EQ(RenderForSqlite("UPDATE t SET a = $2 WHERE id = $1 AND ws = $2"),
            "UPDATE t SET a = ?2 WHERE id = ?1 AND ws = ?2");
}

TEST(RenderForSqliteTest, LeavesQuotedTextAndBareDollarsAlone) {
  EXPECT_EQ(RenderForSqlite("SELECT '$1', \"$2\" FROM t WHERE x = $3"),
            "SELECT '$1', \"$2\" FROM t WHERE x = ?3");
  EXPECT_EQ(RenderForSqlite("SELECT 'it''s $1' WHERE y = $1"), "SELECT 'it''s $1' WHERE y = ?1");
  EXPECT_EQ(RenderForSqlite("SELECT $ FROM t$"), "SELECT $ FROM t$");
}

TEST(InsertIntoTest, AppendsTheExtraColumnsAndTheirValues) {
  SqlParams params = {"a", 1};
  EXPECT_EQ(InsertInto("t", "id, n", {}, params), "INSERT INTO t(id, n) VALUES($1, $2)");
  EXPECT_EQ(params.size(), 2u);
  EXPECT_EQ(InsertInto("t", "id, n", {{"owner", "until"}, {"node", 9}}, params),
            "INSERT INTO t(id, n, owner, until) VALUES($1, $2, $3, $4)");
  ASSERT_EQ(params.size(), 4u);
  EXPECT_EQ(params[2].text(), "node");
  EXPECT_EQ(params[3].int_value(), 9);
  EXPECT_EQ(Placeholders(3, 2), "$3, $4");
  EXPECT_EQ(Placeholders(1, 0), "");
}

TEST(SqlValueTest, Kinds) {
  EXPECT_EQ(SqlValue().kind(), SqlValue::Kind::kNull);
  EXPECT_EQ(SqlValue(int64_t{7}).int_value(), 7);
  EXPECT_EQ(SqlValue("x").kind(), SqlValue::Kind::kText);
  EXPECT_EQ(SqlValue::Vector({}).kind(), SqlValue::Kind::kNull);
  SqlValue v = SqlValue::Vector({1.0f, 0.0f});
  EXPECT_EQ(v.kind(), SqlValue::Kind::kBytes);
  EXPECT_EQ(v.text().size(), 2 * sizeof(float));
  EXPECT_EQ(SqlValue::OptionalInt(std::nullopt).kind(), SqlValue::Kind::kNull);
  EXPECT_EQ(SqlValue::OptionalText(std::string("a")).text(), "a");
}

// A backend connection with a table `t(id, n, s, v)`, and a SqlTxn over it.
class SqlTxnTest : public testing::StoreBackendTest {
 protected:
  void SetUp() override {
    StoreBackendTest::SetUp();
    if (IsSkipped()) return;
    if (is_postgres()) {
      conn_ = std::make_unique<pqxx::connection>(pg_url());
      work_ = std::make_unique<pqxx::work>(*conn_);
      work_->exec("CREATE TABLE t(id TEXT PRIMARY KEY, n BIGINT, s TEXT, v BYTEA)");
      pg_txn_.emplace(*work_);
      txn_ = &*pg_txn_;
    } else {
      ASSERT_EQ(sqlite3_open((data_dir() + "/t.db").c_str(), &db_), SQLITE_OK);
      ASSERT_EQ(sqlite3_exec(db_, "CREATE TABLE t(id TEXT PRIMARY KEY, n INTEGER, s TEXT, v BLOB)",
                             nullptr, nullptr, nullptr),
                SQLITE_OK);
      sqlite_txn_.emplace(db_);
      txn_ = &*sqlite_txn_;
    }
  }
  void TearDown() override {
    txn_ = nullptr;
    pg_txn_.reset();
    sqlite_txn_.reset();
    work_.reset();
    conn_.reset();
    if (db_ != nullptr) sqlite3_close(db_);
    StoreBackendTest::TearDown();
  }

  struct Row {
    std::string id;
    std::optional<int64_t> n;
    std::optional<std::string> s;
    std::vector<float> v;
  };
  std::vector<Row> All() {
    auto rows =
        txn_->QueryAll<Row>("SELECT id, n, s, v FROM t ORDER BY id", {}, [](const RowReader& r) {
          return Row{r.Text(0), r.IsNull(1) ? std::nullopt : std::optional<int64_t>(r.Int(1)),
                     r.IsNull(2) ? std::nullopt : std::optional<std::string>(r.Text(2)),
                     r.Vector(3)};
        });
    EXPECT_TRUE(rows.ok()) << rows.status().ToString();
    return rows.ok() ? *rows : std::vector<Row>{};
  }

  sqlite3* db_ = nullptr;
  std::unique_ptr<pqxx::connection> conn_;
  std::unique_ptr<pqxx::work> work_;
  std::optional<pg::PgTxn> pg_txn_;
  std::optional<sqlite::SqliteTxn> sqlite_txn_;
  SqlTxn* txn_ = nullptr;  // one of the two
};

TEST_P(SqlTxnTest, EveryKindOfParameterReadsBackTheSame) {
  // Float bytes that hold a zero byte, a backslash (0x5c) and a quote (0x27).
  float tricky = 0;
  const unsigned char bytes[4] = {0x00, 0x5c, 0x27, 0x3f};
  std::memcpy(&tricky, bytes, sizeof(tricky));
  const std::vector<float> vec = {0.0f, -1.5f, tricky};
  const std::string text = "it's \"quoted\" $1 \\ and ünïcode";
  const char* insert = "INSERT INTO t(id, n, s, v) VALUES($1, $2, $3, $4)";
  auto one = txn_->Exec(insert, {"a", int64_t{-9007199254740993}, text, SqlValue::Vector(vec)});
  ASSERT_TRUE(one.ok()) << one.status().ToString();
  EXPECT_EQ(*one, 1);
  auto two = txn_->Exec(
      insert, {"b", SqlValue::Null(), SqlValue::OptionalText(std::nullopt), SqlValue::Vector({})});
  ASSERT_TRUE(two.ok()) << two.status().ToString();

  std::vector<Row> rows = All();
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_EQ(rows[0].id, "a");
  EXPECT_EQ(rows[0].n, -9007199254740993);
  EXPECT_EQ(rows[0].s, text);
  ASSERT_EQ(rows[0].v.size(), 3u);
  EXPECT_EQ(std::memcmp(rows[0].v.data(), vec.data(), sizeof(float) * 3), 0);
  EXPECT_EQ(rows[1].n, std::nullopt);
  EXPECT_EQ(rows[1].s, std::nullopt);
  EXPECT_TRUE(rows[1].v.empty());
}

TEST_P(SqlTxnTest, ExecCountsChangedRowsAndPlaceholdersRepeat) {
  for (const char* id : {"a", "b", "c"}) {
    ASSERT_TRUE(txn_->Exec("INSERT INTO t(id, n, s) VALUES($1, $2, $1)", {id, 1}).ok());
  }
  auto changed = txn_->Exec("UPDATE t SET n = $1 WHERE id <> $2", {5, "b"});
  ASSERT_TRUE(changed.ok()) << changed.status().ToString();
  EXPECT_EQ(*changed, 2);
  auto none = txn_->Exec("DELETE FROM t WHERE id = $1", {"zz"});
  ASSERT_TRUE(none.ok());
  EXPECT_EQ(*none, 0);
  auto first = txn_->QueryFirst<std::string>("SELECT s FROM t WHERE n = $1 ORDER BY id LIMIT 1",
                                             {5}, [](const RowReader& r) { return r.Text(0); });
  ASSERT_TRUE(first.ok());
  EXPECT_EQ(*first, std::optional<std::string>("a"));
  auto missing = txn_->QueryFirst<std::string>("SELECT s FROM t WHERE n = $1", {99},
                                               [](const RowReader& r) { return r.Text(0); });
  ASSERT_TRUE(missing.ok());
  EXPECT_FALSE(missing->has_value());
}

TEST_P(SqlTxnTest, AStatementErrorIsAStatusOnSqliteAndAnExceptionForThePoolOnPostgres) {
  ASSERT_TRUE(txn_->Exec("INSERT INTO t(id) VALUES($1)", {"a"}).ok());
  if (is_postgres()) {
    // PgStore's pool turns libpqxx exceptions into Status values (pg_pool.h).
    EXPECT_THROW((void)txn_->Exec("INSERT INTO t(id) VALUES($1)", {"a"}), pqxx::unique_violation);
  } else {
    auto dup = txn_->Exec("INSERT INTO t(id) VALUES($1)", {"a"});
    EXPECT_FALSE(dup.ok());
  }
}

ENGRAM_INSTANTIATE_STORE_BACKENDS(SqlTxnTest);

}  // namespace
}  // namespace engram
