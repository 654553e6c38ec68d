// The two migration series (store/migrations/sqlite and store/migrations/postgres) must give the
// same schema: the same tables, each with the same columns (same kind of value, same
// nullability), and the same indexes (by name and uniqueness: their columns may differ where a
// backend reads its rows another way), apart from what one backend has for a reason of its own
// (listed below, each with its reason). A column or index added to one series and not the other
// fails here, whichever conformance test would or would not have noticed.
#include <gtest/gtest.h>
#include <sqlite3.h>
#include <stdlib.h>

#include <cctype>
#include <filesystem>
#include <map>
#include <pqxx/pqxx>
#include <set>
#include <string>

#include "pg_test_db.h"
#include "store/pg_store.h"
#include "store/sqlite_store.h"

namespace engram {
namespace {

// What one backend's schema says about a column: the kind of value it holds and whether it may be
// NULL. Kinds are dialect-free: int, real, text, bytes.
struct Column {
  std::string kind;
  bool not_null = false;
  bool operator==(const Column&) const = default;
};

struct Schema {
  std::map<std::string, std::map<std::string, Column>> tables;  // table -> column -> what
  std::map<std::string, bool> indexes;                          // index name -> unique
};

// Columns, tables and indexes only one backend has, and why.
const std::set<std::string> kSqliteOnlyTables = {
    "memory_vectors",  // vectors in a table of their own (PostgreSQL: memories.vector)
};
const std::set<std::string> kPostgresOnlyTables = {
    "scope_versions",     // per-scope change counters that let nodes catch up on each other
    "memory_tombstones",  // deletions, so other nodes drop them from their shards
    "schema_migrations",  // the migrations applied (SQLite: PRAGMA user_version)
};
const std::set<std::string> kPostgresOnlyColumns = {
    "kb_docs.lease_owner",       "kb_docs.lease_until",        // job leases shared by nodes
    "memory_events.lease_owner", "memory_events.lease_until",  //
    "skill_tasks.lease_owner",   "skill_tasks.lease_until",    //
    "memories.version",                                        // the scope version of the write
    "memories.vector",           "memories.vector_model",      // SQLite: memory_vectors
};
const std::set<std::string> kSqliteOnlyIndexes = {
    "memories_kind_workspace",        // a workspace's memories in order (PostgreSQL reads them by
                                      // version: memories_workspace_version)
    "sqlite_autoindex_kb_uploads_1",  // SQLite's name for a UNIQUE / PRIMARY KEY constraint
    "sqlite_autoindex_memories_1",
};
const std::set<std::string> kPostgresOnlyIndexes = {
    "memories_id_key",             // PostgreSQL's name for memories' UNIQUE (id)
    "memories_scope_version",      // rows changed since a scope version (catch-up of a node)
    "memories_workspace_version",  //
};

std::string Kind(std::string type) {
  for (auto& c : type) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  if (type == "integer" || type == "bigint" || type == "smallint") return "int";
  if (type == "real" || type == "double precision") return "real";
  if (type == "text" || type == "character varying") return "text";
  if (type == "blob" || type == "bytea") return "bytes";
  return type;  // unknown: compared as it is, so a new type shows up in the failure
}

Schema SqliteSchema(const std::string& path) {
  Schema schema;
  sqlite3* db = nullptr;
  EXPECT_EQ(sqlite3_open_v2(path.c_str(), &db, SQLITE_OPEN_READONLY, nullptr), SQLITE_OK);
  auto each = [&](const std::string& sql, auto&& row) {
    sqlite3_stmt* stmt = nullptr;
    EXPECT_EQ(sqlite3_prepare_v2(db, sql.c_str(), -1, &stmt, nullptr), SQLITE_OK) << sql;
    while (sqlite3_step(stmt) == SQLITE_ROW) row(stmt);
    sqlite3_finalize(stmt);
  };
  auto text = [](sqlite3_stmt* s, int i) {
    const auto* p = sqlite3_column_text(s, i);
    return p ? std::string(reinterpret_cast<const char*>(p)) : std::string();
  };
  // An INTEGER PRIMARY KEY is the rowid: never NULL, though table_info says notnull = 0.
  each(
      "SELECT m.name, c.name, c.type, c.\"notnull\", c.pk FROM sqlite_master m, "
      "pragma_table_info(m.name) c WHERE m.type = 'table' AND m.name NOT LIKE 'sqlite_%'",
      [&](sqlite3_stmt* s) {
        schema.tables[text(s, 0)][text(s, 1)] = {
            Kind(text(s, 2)), sqlite3_column_int(s, 3) != 0 || sqlite3_column_int(s, 4) != 0};
      });
  each(
      "SELECT m.name, l.\"unique\" FROM sqlite_master m, pragma_index_list(m.tbl_name) l "
      "WHERE m.type = 'index' AND l.name = m.name",
      [&](sqlite3_stmt* s) { schema.indexes[text(s, 0)] = sqlite3_column_int(s, 1) != 0; });
  sqlite3_close(db);
  return schema;
}

Schema PostgresSchema(const std::string& url) {
  Schema schema;
  pqxx::connection conn(url);
  pqxx::nontransaction txn(conn);
  for (const auto& row : txn.exec(
           "SELECT table_name, column_name, data_type, is_nullable FROM information_schema.columns "
           "WHERE table_schema = 'public'")) {
    schema.tables[row[0].as<std::string>()][row[1].as<std::string>()] = {
        Kind(row[2].as<std::string>()), row[3].as<std::string>() == "NO"};
  }
  // Primary keys are compared through their columns' NOT NULL, as SQLite's may have no index.
  for (const auto& row : txn.exec("SELECT c.relname, i.indisunique FROM pg_index i JOIN pg_class c "
                                  "ON c.oid = i.indexrelid "
                                  "JOIN pg_namespace n ON n.oid = c.relnamespace "
                                  "WHERE n.nspname = 'public' AND NOT i.indisprimary")) {
    schema.indexes[row[0].as<std::string>()] = row[1].as<bool>();
  }
  return schema;
}

TEST(SchemaParityTest, BothMigrationSeriesGiveTheSameSchema) {
  auto pg = testing::PgTestDatabase::Create();
  if (!pg) GTEST_SKIP() << testing::PgTestDatabase::kSkipMessage;
  char tmpl[] = "/tmp/engram-schema-XXXXXX";
  const std::string dir = mkdtemp(tmpl);
  {
    auto store = SqliteStore::Open({.path = dir + "/engram.db", .intake_journal_dir = dir + "/in"});
    ASSERT_TRUE(store.ok()) << store.status().ToString();
  }
  {
    auto store = PgStore::Open({.url = pg->url()});
    ASSERT_TRUE(store.ok()) << store.status().ToString();
  }
  const Schema sqlite = SqliteSchema(dir + "/engram.db");
  const Schema postgres = PostgresSchema(pg->url());
  std::filesystem::remove_all(dir);

  for (const auto& [table, columns] : sqlite.tables) {
    if (kSqliteOnlyTables.count(table)) continue;
    auto other = postgres.tables.find(table);
    if (other == postgres.tables.end()) {
      ADD_FAILURE() << "table " << table << " exists only on SQLite";
      continue;
    }
    for (const auto& [name, column] : columns) {
      auto it = other->second.find(name);
      if (it == other->second.end()) {
        ADD_FAILURE() << "column " << table << "." << name << " exists only on SQLite";
      } else {
        EXPECT_EQ(column.kind, it->second.kind) << table << "." << name;
        EXPECT_EQ(column.not_null, it->second.not_null) << table << "." << name << " NOT NULL";
      }
    }
    for (const auto& [name, column] : other->second) {
      if (!columns.count(name) && !kPostgresOnlyColumns.count(table + "." + name)) {
        ADD_FAILURE() << "column " << table << "." << name << " exists only on PostgreSQL";
      }
    }
  }
  for (const auto& [table, columns] : postgres.tables) {
    if (!sqlite.tables.count(table) && !kPostgresOnlyTables.count(table)) {
      ADD_FAILURE() << "table " << table << " exists only on PostgreSQL";
    }
  }
  for (const auto& [index, unique] : sqlite.indexes) {
    if (kSqliteOnlyIndexes.count(index)) continue;
    auto it = postgres.indexes.find(index);
    if (it == postgres.indexes.end()) {
      ADD_FAILURE() << "index " << index << " exists only on SQLite";
    } else {
      EXPECT_EQ(unique, it->second) << "index " << index << " UNIQUE";
    }
  }
  for (const auto& [index, unique] : postgres.indexes) {
    if (!sqlite.indexes.count(index) && !kPostgresOnlyIndexes.count(index)) {
      ADD_FAILURE() << "index " << index << " exists only on PostgreSQL";
    }
  }
  // The exceptions name what exists: one left behind after its table or column went is an error.
  for (const auto& table : kSqliteOnlyTables) EXPECT_TRUE(sqlite.tables.count(table)) << table;
  for (const auto& table : kPostgresOnlyTables) EXPECT_TRUE(postgres.tables.count(table)) << table;
  for (const auto& index : kSqliteOnlyIndexes) EXPECT_TRUE(sqlite.indexes.count(index)) << index;
  for (const auto& index : kPostgresOnlyIndexes) {
    EXPECT_TRUE(postgres.indexes.count(index)) << index;
  }
  for (const auto& column : kPostgresOnlyColumns) {
    const auto dot = column.find('.');
    const auto table = postgres.tables.find(column.substr(0, dot));
    EXPECT_TRUE(table != postgres.tables.end() && table->second.count(column.substr(dot + 1)))
        << column;
  }
}

}  // namespace
}  // namespace engram
