// SqliteStore: agent memories, history and events.
#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>

#include "common/ids.h"
#include "store/sqlite_store.h"

namespace engram {
namespace {

class AgentMemoryStoreTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/engram-agent-store-XXXXXX";
    dir_ = mkdtemp(tmpl);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  std::unique_ptr<SqliteStore> OpenStore() {
    auto s = SqliteStore::Open({.path = dir_ + "/engram.db"});
    EXPECT_TRUE(s.ok()) << s.status().ToString();
    return std::move(s).value();
  }

  static MemoryChange Insert(const std::string& user, const std::string& text) {
    MemoryChange c;
    c.op = MemoryChange::Op::kInsert;
    c.record.id = NewId("m");
    c.record.user_id = user;
    c.record.text = text;
    c.record.created_at_us = c.record.updated_at_us = 10;
    c.record.vector = {1.0f, 0.0f};
    c.record.vector_model = "test";
    return c;
  }

  std::string dir_;
};

TEST_F(AgentMemoryStoreTest, ChangesCommitWithHistoryAndEventEnd) {
  auto store = OpenStore();
  MemoryEventRecord event{.id = NewId("me"), .workspace = "w", .status = "PENDING",
                          .request_json = "{}", .created_at_us = 1, .updated_at_us = 1};
  ASSERT_TRUE(store->InsertEvent(event).ok());

  MemoryChangeBatch batch;
  batch.workspace = "w";
  batch.event_id = event.id;
  batch.changes = {Insert("u", "likes tea"), Insert("u", "lives in Oslo")};
  MemoryEventRecord end = event;
  end.status = "SUCCEEDED";
  end.result_json = R"({"results":[]})";
  batch.finish_event = end;
  auto outcome = store->ApplyMemoryChanges(batch);
  ASSERT_TRUE(outcome.ok()) << outcome.status().ToString();
  ASSERT_EQ(outcome->inserted.size(), 2u);
  EXPECT_GT(outcome->inserted[1].seq, outcome->inserted[0].seq);

  auto got = store->GetEvent("w", event.id);
  ASSERT_TRUE(got.ok());
  EXPECT_EQ(got->status, "SUCCEEDED");
  EXPECT_EQ(got->result_json, R"({"results":[]})");
  EXPECT_EQ(store->GetEvent("other", event.id).status().code(), StatusCode::kNotFound);

  // Update text (vector dropped), then metadata only (vector kept), then delete.
  MemoryChangeBatch update;
  update.workspace = "w";
  MemoryChange up;
  up.op = MemoryChange::Op::kUpdate;
  up.record = outcome->inserted[0];
  up.record.vector.clear();
  up.record.text = "loves tea";
  up.old_text = "likes tea";
  update.changes = {up};
  ASSERT_TRUE(store->ApplyMemoryChanges(update).ok());
  auto loaded = store->LoadAgentMemories("w");
  ASSERT_TRUE(loaded.ok());
  ASSERT_EQ(loaded->size(), 2u);
  EXPECT_EQ((*loaded)[0].text, "loves tea");
  EXPECT_TRUE((*loaded)[0].vector.empty());
  EXPECT_EQ((*loaded)[1].vector.size(), 2u);

  MemoryChangeBatch del;
  del.workspace = "w";
  MemoryChange d;
  d.op = MemoryChange::Op::kDelete;
  d.record.id = outcome->inserted[0].id;
  d.old_text = "loves tea";
  MemoryChange missing = d;
  missing.record.id = "m-missing";
  del.changes = {d, missing};
  auto deleted = store->ApplyMemoryChanges(del);
  ASSERT_TRUE(deleted.ok());
  EXPECT_EQ(deleted->applied, (std::vector<bool>{true, false}));
  EXPECT_EQ(store->LoadAgentMemories("w")->size(), 1u);

  auto history = store->GetHistory("w", outcome->inserted[0].id);
  ASSERT_TRUE(history.ok());
  ASSERT_EQ(history->size(), 3u);
  EXPECT_EQ((*history)[0].event, "ADD");
  EXPECT_EQ((*history)[0].event_id, event.id);
  EXPECT_FALSE((*history)[0].old_text.has_value());
  EXPECT_EQ((*history)[1].event, "UPDATE");
  EXPECT_EQ((*history)[1].old_text, "likes tea");
  EXPECT_EQ((*history)[1].new_text, "loves tea");
  EXPECT_EQ((*history)[2].event, "DELETE");
  EXPECT_FALSE((*history)[2].new_text.has_value());
}

TEST_F(AgentMemoryStoreTest, UnfinishedEventsSurviveReopen) {
  std::string running_id, done_id;
  {
    auto store = OpenStore();
    for (const char* status : {"PENDING", "RUNNING", "SUCCEEDED"}) {
      MemoryEventRecord e{.id = NewId("me"), .workspace = "w", .status = "PENDING",
                          .request_json = "{}", .created_at_us = 5, .updated_at_us = 5};
      ASSERT_TRUE(store->InsertEvent(e).ok());
      ASSERT_TRUE(store->UpdateEventStatus(e.id, status, "").ok());
      if (std::string(status) == "RUNNING") running_id = e.id;
      if (std::string(status) == "SUCCEEDED") done_id = e.id;
    }
  }
  auto store = OpenStore();
  auto unfinished = store->UnfinishedEvents();
  ASSERT_TRUE(unfinished.ok());
  ASSERT_EQ(unfinished->size(), 2u);
  bool saw_running = false;
  for (const auto& e : *unfinished) {
    EXPECT_NE(e.id, done_id);
    saw_running = saw_running || e.id == running_id;
  }
  EXPECT_TRUE(saw_running);
}

TEST_F(AgentMemoryStoreTest, LeaderboardMessagesAndAgentMemoriesStayApart) {
  auto store = OpenStore();
  AddBatch lb;
  MemoryRecord m;
  m.id = NewId("m");
  m.workspace = "w";
  m.user_id = "u";
  m.text = "a leaderboard message";
  lb.memories = {m};
  ASSERT_TRUE(store->Add(lb).ok());
  MemoryChangeBatch batch;
  batch.workspace = "w";
  batch.changes = {Insert("u", "an agent memory")};
  ASSERT_TRUE(store->ApplyMemoryChanges(batch).ok());
  auto scope = store->LoadScope("w", "u");
  ASSERT_TRUE(scope.ok());
  ASSERT_EQ(scope->size(), 1u);
  EXPECT_EQ((*scope)[0].text, "a leaderboard message");
  auto agent = store->LoadAgentMemories("w");
  ASSERT_EQ(agent->size(), 1u);
  EXPECT_EQ((*agent)[0].text, "an agent memory");
}

}  // namespace
}  // namespace engram
