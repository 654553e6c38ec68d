// Store: agent memories, history and events, on every backend (SQLite and, with a test cluster,
// PostgreSQL), plus the versions, tombstones and job leases several PostgreSQL nodes rely on.
#include <gtest/gtest.h>
#include <sqlite3.h>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <filesystem>
#include <future>
#include <limits>
#include <mutex>
#include <pqxx/pqxx>
#include <thread>

#include "common/ids.h"
#include "store_backends.h"

namespace engram {
namespace {

using std::chrono::milliseconds;

class AgentMemoryStoreTest : public testing::StoreBackendTest {
 protected:
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

  static MemoryChange Delete(const std::string& id) {
    MemoryChange d;
    d.op = MemoryChange::Op::kDelete;
    d.record.id = id;
    return d;
  }

  static MemoryEventRecord Event(JobStatus status = JobStatus::kPending) {
    return {.id = NewId("me"),
            .workspace = "w",
            .status = status,
            .request_json = "{}",
            .created_at_us = 5,
            .updated_at_us = 5};
  }
};

// A status word this build does not know (a row written by hand or by a later version) reads
// as failed: the event is still found and listed, and no restart resumes it.
TEST_P(AgentMemoryStoreTest, UnknownStoredStatusReadsAsFailed) {
  // On PostgreSQL the reopened store is another node: a short lease lets it claim the event if
  // the claim took it for unfinished.
  const PgStoreOptions pg{.lease = milliseconds(100)};
  auto store = OpenStore(pg);
  ASSERT_NE(store, nullptr);
  MemoryEventRecord event = Event();
  ASSERT_TRUE(store->InsertEvent(event).ok());
  const std::string sql =
      "UPDATE memory_events SET status = 'PAUSED' WHERE id = '" + event.id + "'";
  if (is_postgres()) {
    pqxx::connection c(pg_url());
    pqxx::work txn(c);
    txn.exec(sql);
    txn.commit();
  } else {
    sqlite3* db = nullptr;
    ASSERT_EQ(sqlite3_open((data_dir() + "/engram.db").c_str(), &db), SQLITE_OK);
    char* err = nullptr;
    EXPECT_EQ(sqlite3_exec(db, sql.c_str(), nullptr, nullptr, &err), SQLITE_OK) << (err ? err : "");
    sqlite3_free(err);
    sqlite3_close(db);
  }
  auto got = store->GetEvent("w", event.id);
  ASSERT_TRUE(got.ok()) << got.status().ToString();
  EXPECT_EQ(got->status, JobStatus::kFailed);
  size_t total = 0;
  auto listed = store->ListEvents("w", 0, 10, &total);
  ASSERT_TRUE(listed.ok()) << listed.status().ToString();
  ASSERT_EQ(listed->size(), 1u);
  EXPECT_EQ((*listed)[0].status, JobStatus::kFailed);
  store.reset();
  ExpireLeases();
  store = OpenStore(pg);
  ASSERT_NE(store, nullptr);
  auto unfinished = store->UnfinishedEvents();
  ASSERT_TRUE(unfinished.ok()) << unfinished.status().ToString();
  EXPECT_TRUE(unfinished->empty());
}

TEST_P(AgentMemoryStoreTest, ChangesCommitWithHistoryAndEventEnd) {
  auto store = OpenStore();
  ASSERT_NE(store, nullptr);
  MemoryEventRecord event{.id = NewId("me"),
                          .workspace = "w",
                          .status = JobStatus::kPending,
                          .request_json = "{}",
                          .created_at_us = 1,
                          .updated_at_us = 1};
  ASSERT_TRUE(store->InsertEvent(event).ok());

  MemoryChangeBatch batch;
  batch.workspace = "w";
  batch.event_id = event.id;
  batch.changes = {Insert("u", "likes tea"), Insert("u", "lives in Oslo")};
  MemoryEventRecord end = event;
  end.status = JobStatus::kSucceeded;
  end.result_json = R"({"results":[]})";
  batch.finish_event = end;
  auto outcome = store->ApplyMemoryChanges(batch);
  ASSERT_TRUE(outcome.ok()) << outcome.status().ToString();
  ASSERT_EQ(outcome->inserted.size(), 2u);
  EXPECT_GT(outcome->inserted[1].seq, outcome->inserted[0].seq);

  auto got = store->GetEvent("w", event.id);
  ASSERT_TRUE(got.ok());
  EXPECT_EQ(got->status, JobStatus::kSucceeded);
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

TEST_P(AgentMemoryStoreTest, AppIdAndCategoriesRoundTripAndUpdate) {
  auto store = OpenStore();
  ASSERT_NE(store, nullptr);
  MemoryChange tagged = Insert("u", "likes sushi");
  tagged.record.app_id = "shop";
  tagged.record.categories = {"food", "user_preferences"};
  MemoryChange plain = Insert("u", "lives in Oslo");
  auto outcome = store->ApplyMemoryChanges({.workspace = "w", .changes = {tagged, plain}});
  ASSERT_TRUE(outcome.ok()) << outcome.status().ToString();

  auto loaded = store->LoadAgentMemories("w");
  ASSERT_TRUE(loaded.ok());
  ASSERT_EQ(loaded->size(), 2u);
  EXPECT_EQ((*loaded)[0].app_id, "shop");
  EXPECT_EQ((*loaded)[0].categories, (std::vector<std::string>{"food", "user_preferences"}));
  EXPECT_EQ((*loaded)[1].app_id, "");
  EXPECT_TRUE((*loaded)[1].categories.empty());

  // An update writes the categories, created_at, expires_at and message time it carries.
  MemoryChange up;
  up.op = MemoryChange::Op::kUpdate;
  up.record = outcome->inserted[0];
  up.record.vector.clear();
  up.record.categories = {"travel"};
  up.record.created_at_us = 3;
  up.record.expires_at_us = 99;
  up.record.source_ts_us = 1717236000000000;
  up.old_text = up.record.text;
  MemoryChange clear;
  clear.op = MemoryChange::Op::kUpdate;
  clear.record = outcome->inserted[1];
  clear.record.vector.clear();
  clear.record.categories = {};
  clear.old_text = clear.record.text;
  ASSERT_TRUE(store->ApplyMemoryChanges({.workspace = "w", .changes = {up, clear}}).ok());
  loaded = store->LoadAgentMemories("w");
  ASSERT_TRUE(loaded.ok());
  EXPECT_EQ((*loaded)[0].categories, std::vector<std::string>{"travel"});
  EXPECT_EQ((*loaded)[0].created_at_us, 3);
  EXPECT_EQ((*loaded)[0].expires_at_us, 99);
  EXPECT_EQ((*loaded)[0].source_ts_us, 1717236000000000);
  EXPECT_EQ((*loaded)[0].app_id, "shop");
  EXPECT_EQ((*loaded)[0].vector.size(), 2u);  // text unchanged: the vector stays
  EXPECT_TRUE((*loaded)[1].categories.empty());
  EXPECT_FALSE((*loaded)[1].expires_at_us.has_value());
  EXPECT_FALSE((*loaded)[1].source_ts_us.has_value());
}

TEST_P(AgentMemoryStoreTest, FeedbackIsDurable) {
  auto store = OpenStore();
  ASSERT_NE(store, nullptr);
  const MemoryFeedbackRecord first{.id = NewId("mf"),
                                   .memory_id = "m-1",
                                   .feedback = "NEGATIVE",
                                   .reason = "outdated",
                                   .created_at_us = 10};
  const MemoryFeedbackRecord second{
      .id = NewId("mf"), .memory_id = "m-1", .feedback = "", .reason = "", .created_at_us = 20};
  ASSERT_TRUE(store->InsertFeedback("w", first).ok());
  ASSERT_TRUE(store->InsertFeedback("w", second).ok());
  EXPECT_FALSE(store->InsertFeedback("other", first).ok()) << "feedback ids are unique";
  store.reset();
  store = OpenStore();
  ASSERT_NE(store, nullptr);
  auto got = store->GetFeedback("w", "m-1");
  ASSERT_TRUE(got.ok()) << got.status().ToString();
  ASSERT_EQ(got->size(), 2u);
  EXPECT_EQ((*got)[0].id, first.id);
  EXPECT_EQ((*got)[0].feedback, "NEGATIVE");
  EXPECT_EQ((*got)[0].reason, "outdated");
  EXPECT_EQ((*got)[0].created_at_us, 10);
  EXPECT_EQ((*got)[1].feedback, "");
  EXPECT_TRUE(store->GetFeedback("other", "m-1")->empty());
  EXPECT_TRUE(store->GetFeedback("w", "m-2")->empty());
}

TEST_P(AgentMemoryStoreTest, FeedbackGoesWithItsMemory) {
  auto store = OpenStore();
  ASSERT_NE(store, nullptr);
  auto inserted = store->ApplyMemoryChanges(
      {.workspace = "w", .changes = {Insert("u", "likes tea"), Insert("u", "lives in Oslo")}});
  ASSERT_TRUE(inserted.ok()) << inserted.status().ToString();
  const std::string gone = inserted->inserted[0].id;
  const std::string kept = inserted->inserted[1].id;
  for (const std::string& id : {gone, kept}) {
    ASSERT_TRUE(store
                    ->InsertFeedback("w", {.id = NewId("mf"),
                                           .memory_id = id,
                                           .feedback = "NEGATIVE",
                                           .reason = "wrong",
                                           .created_at_us = 1})
                    .ok());
  }
  MemoryChange d;
  d.op = MemoryChange::Op::kDelete;
  d.record.id = gone;
  d.old_text = "likes tea";
  ASSERT_TRUE(store->ApplyMemoryChanges({.workspace = "w", .changes = {d}}).ok());
  EXPECT_TRUE(store->GetFeedback("w", gone)->empty());
  EXPECT_EQ(store->GetFeedback("w", kept)->size(), 1u);
}

TEST_P(AgentMemoryStoreTest, ListEventsPagesNewestFirst) {
  auto store = OpenStore();
  ASSERT_NE(store, nullptr);
  std::vector<MemoryEventRecord> events;
  for (int i = 0; i < 5; ++i) {
    MemoryEventRecord e = Event();
    e.created_at_us = e.updated_at_us = 100 + i;
    events.push_back(e);
  }
  // Two stored with their end, three accepted (on SQLite, in the intake journal: no row yet).
  for (int i = 0; i < 2; ++i) {
    ASSERT_TRUE(store->InsertEvent(events[i]).ok());
    MemoryEventRecord end = events[i];
    end.status = JobStatus::kSucceeded;
    ASSERT_TRUE(store->ApplyMemoryChanges({.workspace = "w", .finish_event = end}).ok());
  }
  for (int i = 2; i < 5; ++i) {
    std::promise<Status> accepted;
    store->AcceptEvent(events[i], [&](Status st) { accepted.set_value(st); });
    ASSERT_TRUE(accepted.get_future().get().ok());
  }
  MemoryEventRecord elsewhere = Event();
  elsewhere.workspace = "other";
  ASSERT_TRUE(store->InsertEvent(elsewhere).ok());

  size_t total = 0;
  auto all = store->ListEvents("w", 0, 100, &total);
  ASSERT_TRUE(all.ok()) << all.status().ToString();
  EXPECT_EQ(total, 5u);
  ASSERT_EQ(all->size(), 5u);
  for (int i = 0; i < 5; ++i) EXPECT_EQ((*all)[i].id, events[4 - i].id) << i;
  EXPECT_EQ((*all)[4].status, JobStatus::kSucceeded);
  EXPECT_EQ((*all)[0].status, JobStatus::kPending);
  auto page = store->ListEvents("w", 2, 2, &total);
  ASSERT_TRUE(page.ok());
  EXPECT_EQ(total, 5u);
  ASSERT_EQ(page->size(), 2u);
  EXPECT_EQ((*page)[0].id, events[2].id);
  EXPECT_EQ((*page)[1].id, events[1].id);
  auto beyond = store->ListEvents("w", 5, 2, &total);
  ASSERT_TRUE(beyond.ok());
  EXPECT_TRUE(beyond->empty());
  EXPECT_EQ(total, 5u);
  // An accepted event that ends is listed once, by its row.
  MemoryEventRecord end = events[3];
  end.status = JobStatus::kFailed;
  ASSERT_TRUE(store->ApplyMemoryChanges({.workspace = "w", .finish_event = end}).ok());
  all = store->ListEvents("w", 0, std::numeric_limits<size_t>::max(), &total);
  ASSERT_TRUE(all.ok());
  EXPECT_EQ(total, 5u);
  ASSERT_EQ(all->size(), 5u);
  EXPECT_EQ((*all)[1].status, JobStatus::kFailed);
  EXPECT_TRUE(store->ListEvents("nobody", 0, 10, &total)->empty());
  EXPECT_EQ(total, 0u);
}

TEST_P(AgentMemoryStoreTest, MetadataOnlyUpdateKeepsTheVector) {
  auto store = OpenStore();
  ASSERT_NE(store, nullptr);
  MemoryChangeBatch batch;
  batch.workspace = "w";
  batch.changes = {Insert("u", "likes tea")};
  auto outcome = store->ApplyMemoryChanges(batch);
  ASSERT_TRUE(outcome.ok()) << outcome.status().ToString();
  MemoryChange up;
  up.op = MemoryChange::Op::kUpdate;
  up.record = outcome->inserted[0];
  up.record.vector.clear();
  up.record.metadata_json = R"({"k":1})";
  up.old_text = "likes tea";
  up.old_metadata_json = "{}";
  MemoryChangeBatch update{.workspace = "w", .changes = {up}};
  auto updated = store->ApplyMemoryChanges(update);
  ASSERT_TRUE(updated.ok()) << updated.status().ToString();
  EXPECT_EQ(updated->applied, (std::vector<bool>{true}));
  auto loaded = store->LoadAgentMemories("w");
  ASSERT_TRUE(loaded.ok());
  ASSERT_EQ(loaded->size(), 1u);
  EXPECT_EQ((*loaded)[0].metadata_json, R"({"k":1})");
  EXPECT_EQ((*loaded)[0].vector, (std::vector<float>{1.0f, 0.0f}));
  EXPECT_EQ((*loaded)[0].vector_model, "test");
}

// The history a shard's load reads for replaced versions: the ADD and UPDATE rows of the memories
// an update changed, oldest first, of this workspace only; a memory never updated brings none.
TEST_P(AgentMemoryStoreTest, ReplacedHistoryHoldsTheUpdatedMemoriesRows) {
  auto store = OpenStore();
  ASSERT_NE(store, nullptr);
  MemoryChangeBatch batch{.workspace = "w",
                          .changes = {Insert("u", "lives in Oslo"), Insert("u", "likes tea")}};
  auto inserted = store->ApplyMemoryChanges(batch);
  ASSERT_TRUE(inserted.ok()) << inserted.status().ToString();
  MemoryChangeBatch elsewhere{.workspace = "w2", .changes = {Insert("u", "lives in Rome")}};
  auto other = store->ApplyMemoryChanges(elsewhere);
  ASSERT_TRUE(other.ok()) << other.status().ToString();
  auto update = [&](const std::string& workspace, const MemoryRecord& r, std::string text) {
    MemoryChange up;
    up.op = MemoryChange::Op::kUpdate;
    up.record = r;
    up.old_text = r.text;
    up.old_metadata_json = r.metadata_json;
    up.record.text = std::move(text);
    up.record.updated_at_us = 20;
    auto done = store->ApplyMemoryChanges({.workspace = workspace, .changes = {up}});
    ASSERT_TRUE(done.ok()) << done.status().ToString();
  };
  update("w", inserted->inserted[0], "lives in Bergen");
  update("w2", other->inserted[0], "lives in Milan");
  auto rows = store->LoadReplacedHistory("w");
  ASSERT_TRUE(rows.ok()) << rows.status().ToString();
  ASSERT_EQ(rows->size(), 2u);
  EXPECT_EQ((*rows)[0].memory_id, inserted->inserted[0].id);
  EXPECT_EQ((*rows)[0].event, "ADD");
  EXPECT_EQ((*rows)[0].new_text, "lives in Oslo");
  EXPECT_EQ((*rows)[1].event, "UPDATE");
  EXPECT_EQ((*rows)[1].new_text, "lives in Bergen");
  EXPECT_LT((*rows)[0].seq, (*rows)[1].seq);
  ASSERT_TRUE(
      store->ApplyMemoryChanges({.workspace = "w", .changes = {Delete(inserted->inserted[0].id)}})
          .ok());
  rows = store->LoadReplacedHistory("w");
  ASSERT_TRUE(rows.ok());
  EXPECT_EQ(rows->size(), 2u);  // a DELETE row is not read; the shard skips unknown ids
  EXPECT_TRUE(store->LoadReplacedHistory("none")->empty());
}

// AcceptEvent answers once the event is durable; from then on GetEvent finds it (even from the
// callback, before the SQLite row is committed) and a restart resumes it.
TEST_P(AgentMemoryStoreTest, AcceptedEventsAreFoundAtOnceAndSurviveReopen) {
  const PgStoreOptions pg{.lease = milliseconds(200)};  // as in the test below
  std::vector<std::string> ids;
  {
    auto store = OpenStore(pg);
    ASSERT_NE(store, nullptr);
    std::mutex mu;
    std::condition_variable cv;
    int answered = 0, found_in_callback = 0;
    for (int i = 0; i < 50; ++i) {
      MemoryEventRecord e = Event();
      e.request_json = R"({"n":)" + std::to_string(i) + "}";
      ids.push_back(e.id);
      store->AcceptEvent(e, [&, id = e.id, workspace = e.workspace](Status st) {
        EXPECT_TRUE(st.ok()) << st.ToString();
        auto got = store->GetEvent(workspace, id);
        std::lock_guard<std::mutex> lock(mu);
        if (got.ok() && got->status == JobStatus::kPending) ++found_in_callback;
        ++answered;
        cv.notify_all();
      });
    }
    std::unique_lock<std::mutex> lock(mu);
    ASSERT_TRUE(cv.wait_for(lock, std::chrono::seconds(10), [&] { return answered == 50; }));
    EXPECT_EQ(found_in_callback, 50);
    auto one = store->GetEvent("w", ids[7]);
    ASSERT_TRUE(one.ok());
    EXPECT_EQ(one->request_json, R"({"n":7})");
    EXPECT_EQ(store->GetEvent("other", ids[7]).status().code(), StatusCode::kNotFound);
  }
  ExpireLeases();
  auto store = OpenStore(pg);
  ASSERT_NE(store, nullptr);
  auto unfinished = store->UnfinishedEvents();
  ASSERT_TRUE(unfinished.ok());
  EXPECT_EQ(unfinished->size(), ids.size());
}

TEST_P(AgentMemoryStoreTest, UnfinishedEventsSurviveReopen) {
  // PostgreSQL hands a stopped node's events to another node once their lease runs out: a short
  // one here, waited for below.
  const PgStoreOptions pg{.lease = milliseconds(200)};
  std::string running_id, done_id;
  {
    auto store = OpenStore(pg);
    ASSERT_NE(store, nullptr);
    for (JobStatus status : {JobStatus::kPending, JobStatus::kRunning, JobStatus::kSucceeded}) {
      MemoryEventRecord e{.id = NewId("me"),
                          .workspace = "w",
                          .status = JobStatus::kPending,
                          .request_json = "{}",
                          .created_at_us = 5,
                          .updated_at_us = 5};
      ASSERT_TRUE(store->InsertEvent(e).ok());
      ASSERT_TRUE(store->UpdateEventStatus(e.id, status, "").ok());
      if (status == JobStatus::kRunning) running_id = e.id;
      if (status == JobStatus::kSucceeded) done_id = e.id;
    }
  }
  ExpireLeases();
  auto store = OpenStore(pg);
  ASSERT_NE(store, nullptr);
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

TEST_P(AgentMemoryStoreTest, LeaderboardMessagesAndAgentMemoriesStayApart) {
  auto store = OpenStore();
  ASSERT_NE(store, nullptr);
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

// --- PostgreSQL: several nodes on one database ---

TEST_P(AgentMemoryStoreTest, ChangesBumpTheVersionAndDeletionsLeaveTombstones) {
  if (!is_postgres()) GTEST_SKIP() << "scope versions exist on shared (PostgreSQL) stores only";
  auto store = OpenStore();
  ASSERT_NE(store, nullptr);
  const std::string scope = ScopeKeyAgentMemories("w");
  MemoryChangeBatch insert{.workspace = "w", .changes = {Insert("u", "a"), Insert("u", "b")}};
  auto inserted = store->ApplyMemoryChanges(insert);
  ASSERT_TRUE(inserted.ok()) << inserted.status().ToString();
  const int64_t v1 = *store->ScopeVersion(scope);
  EXPECT_EQ(v1, 1);
  const MemoryRecord& a = inserted->inserted[0];
  const MemoryRecord& b = inserted->inserted[1];

  MemoryChange up;
  up.op = MemoryChange::Op::kUpdate;
  up.record = a;
  up.record.text = "a, changed";
  up.record.vector = {0.0f, 1.0f};
  up.old_text = "a";
  ASSERT_TRUE(store->ApplyMemoryChanges({.workspace = "w", .changes = {up}}).ok());
  ASSERT_TRUE(store->ApplyMemoryChanges({.workspace = "w", .changes = {Delete(b.id)}}).ok());
  const int64_t v3 = *store->ScopeVersion(scope);
  EXPECT_EQ(v3, v1 + 2);

  auto delta = store->LoadAgentMemoriesSince("w", v1);
  ASSERT_TRUE(delta.ok()) << delta.status().ToString();
  EXPECT_EQ(delta->version, v3);
  ASSERT_EQ(delta->upserts.size(), 1u);
  EXPECT_EQ(delta->upserts[0].id, a.id);
  EXPECT_EQ(delta->upserts[0].text, "a, changed");
  EXPECT_EQ(delta->upserts[0].vector, (std::vector<float>{0.0f, 1.0f}));
  EXPECT_EQ(delta->removed_ids, (std::vector<std::string>{b.id}));

  auto from_start = store->LoadAgentMemoriesSince("w", 0);
  ASSERT_TRUE(from_start.ok());
  EXPECT_EQ(from_start->upserts.size(), 1u);
  EXPECT_EQ(from_start->removed_ids, (std::vector<std::string>{b.id}));
  auto none = store->LoadAgentMemoriesSince("w", v3);
  ASSERT_TRUE(none.ok());
  EXPECT_EQ(none->version, v3);
  EXPECT_TRUE(none->upserts.empty());
  EXPECT_TRUE(none->removed_ids.empty());

  // A vector stored later is a change too.
  ASSERT_TRUE(store->PutVectors({{a.seq, "model-y", {0.6f, 0.8f}}}).ok());
  EXPECT_EQ(*store->ScopeVersion(scope), v3 + 1);
  auto vectors = store->LoadAgentMemoriesSince("w", v3);
  ASSERT_TRUE(vectors.ok());
  ASSERT_EQ(vectors->upserts.size(), 1u);
  EXPECT_EQ(vectors->upserts[0].vector_model, "model-y");
}

TEST_P(AgentMemoryStoreTest, StaleExpectedVersionConflictsAndWritesNothing) {
  if (!is_postgres()) GTEST_SKIP() << "scope versions exist on shared (PostgreSQL) stores only";
  auto store = OpenStore();
  ASSERT_NE(store, nullptr);
  const std::string scope = ScopeKeyAgentMemories("w");
  MemoryEventRecord event = Event();
  ASSERT_TRUE(store->InsertEvent(event).ok());
  ASSERT_TRUE(
      store->ApplyMemoryChanges({.workspace = "w", .changes = {Insert("u", "first")}}).ok());
  ASSERT_EQ(*store->ScopeVersion(scope), 1);

  // Planned at version 0, but another writer got version 1 in between.
  MemoryChangeBatch stale{.workspace = "w", .event_id = event.id};
  MemoryChange late = Insert("u", "planned on old data");
  stale.changes = {late};
  MemoryEventRecord end = event;
  end.status = JobStatus::kSucceeded;
  stale.finish_event = end;
  stale.expected_version = 0;
  auto conflict = store->ApplyMemoryChanges(stale);
  EXPECT_EQ(conflict.status().code(), StatusCode::kConflict);
  EXPECT_EQ(*store->ScopeVersion(scope), 1);
  EXPECT_EQ(store->LoadAgentMemories("w")->size(), 1u);
  EXPECT_TRUE(store->GetHistory("w", late.record.id)->empty());
  EXPECT_EQ(store->GetEvent("w", event.id)->status, JobStatus::kPending);

  stale.expected_version = 1;
  auto fresh = store->ApplyMemoryChanges(stale);
  ASSERT_TRUE(fresh.ok()) << fresh.status().ToString();
  EXPECT_EQ(*store->ScopeVersion(scope), 2);
  EXPECT_EQ(store->LoadAgentMemories("w")->size(), 2u);
  EXPECT_EQ(store->GetEvent("w", event.id)->status, JobStatus::kSucceeded);
}

TEST_P(AgentMemoryStoreTest, EventsOfADeadNodeMoveToAnotherNode) {
  if (!is_postgres()) GTEST_SKIP() << "job leases exist on shared (PostgreSQL) stores only";
  auto node_a = OpenStore({.node_id = "a", .lease = milliseconds(300)});
  auto node_b = OpenStore({.node_id = "b"});
  ASSERT_NE(node_a, nullptr);
  ASSERT_NE(node_b, nullptr);
  MemoryEventRecord event = Event();
  ASSERT_TRUE(node_a->InsertEvent(event).ok());
  MemoryEventRecord done = Event(JobStatus::kSucceeded);
  ASSERT_TRUE(node_a->InsertEvent(done).ok());

  // Longer than the lease: only a renewal by node a keeps the event from node b.
  std::this_thread::sleep_for(milliseconds(700));
  auto while_alive = node_b->UnfinishedEvents();
  ASSERT_TRUE(while_alive.ok()) << while_alive.status().ToString();
  EXPECT_TRUE(while_alive->empty());

  node_a.reset();  // node a dies; its lease runs out
  ExpireLeases();
  auto taken = node_b->UnfinishedEvents();
  ASSERT_TRUE(taken.ok()) << taken.status().ToString();
  ASSERT_EQ(taken->size(), 1u);
  EXPECT_EQ((*taken)[0].id, event.id);
  EXPECT_EQ((*taken)[0].status, JobStatus::kPending);
  // Node b holds it now (and renews it): nobody claims it again.
  auto again = node_b->UnfinishedEvents();
  ASSERT_TRUE(again.ok());
  EXPECT_TRUE(again->empty());
}

TEST_P(AgentMemoryStoreTest, ARestartedNodeResumesItsEventsAtOnce) {
  if (!is_postgres()) GTEST_SKIP() << "job leases exist on shared (PostgreSQL) stores only";
  // The default lease (30 s) has not run out: the restart alone hands the events back.
  const PgStoreOptions pg{.node_id = "n"};
  MemoryEventRecord event = Event();
  {
    auto store = OpenStore(pg);
    ASSERT_NE(store, nullptr);
    ASSERT_TRUE(store->InsertEvent(event).ok());
  }
  auto other = OpenStore({.node_id = "other"});
  ASSERT_NE(other, nullptr);
  auto restarted = OpenStore(pg);
  ASSERT_NE(restarted, nullptr);
  auto unfinished = restarted->UnfinishedEvents();
  ASSERT_TRUE(unfinished.ok()) << unfinished.status().ToString();
  ASSERT_EQ(unfinished->size(), 1u);
  EXPECT_EQ((*unfinished)[0].id, event.id);
  EXPECT_TRUE(other->UnfinishedEvents()->empty());
}

TEST_P(AgentMemoryStoreTest, UnfinishedEventsComeOldestFirst) {
  const PgStoreOptions pg{.lease = milliseconds(100)};
  std::vector<std::string> ids;
  {
    auto store = OpenStore(pg);
    ASSERT_NE(store, nullptr);
    for (int64_t created : {30, 10, 20, 10}) {
      MemoryEventRecord e = Event();
      e.created_at_us = created;
      ASSERT_TRUE(store->InsertEvent(e).ok());
      ids.push_back(e.id);
    }
  }
  ExpireLeases();
  auto store = OpenStore(pg);
  ASSERT_NE(store, nullptr);
  auto unfinished = store->UnfinishedEvents();
  ASSERT_TRUE(unfinished.ok());
  ASSERT_EQ(unfinished->size(), 4u);
  std::vector<std::string> ten = {ids[1], ids[3]};
  std::sort(ten.begin(), ten.end());
  EXPECT_EQ((*unfinished)[0].id, ten[0]);
  EXPECT_EQ((*unfinished)[1].id, ten[1]);
  EXPECT_EQ((*unfinished)[2].id, ids[2]);
  EXPECT_EQ((*unfinished)[3].id, ids[0]);
}

TEST_P(AgentMemoryStoreTest, TextWithNulIsRefusedBeforeWriting) {
  if (!is_postgres()) GTEST_SKIP() << "SQLite stores NUL characters";
  auto store = OpenStore();
  ASSERT_NE(store, nullptr);
  MemoryChangeBatch batch{.workspace = "w",
                          .changes = {Insert("u", "fine"), Insert("u", std::string("a\0b", 3))}};
  EXPECT_EQ(store->ApplyMemoryChanges(batch).status().code(), StatusCode::kInvalidParameter);
  EXPECT_TRUE(store->LoadAgentMemories("w")->empty());
  EXPECT_EQ(*store->ScopeVersion(ScopeKeyAgentMemories("w")), 0);
  MemoryEventRecord e = Event();
  e.request_json = std::string("{\0}", 3);
  EXPECT_EQ(store->InsertEvent(e).code(), StatusCode::kInvalidParameter);
  EXPECT_EQ(store->GetEvent("w", e.id).status().code(), StatusCode::kNotFound);
}

ENGRAM_INSTANTIATE_STORE_BACKENDS(AgentMemoryStoreTest);

// SQLite's intake journal: an acknowledged event whose row never reached the database (the process
// died first) is stored from the journal at the next open. Simulated by opening a second database
// on a copy of the first one's journal, taken once the event was acknowledged.
TEST(SqliteIntakeJournalTest, AcknowledgedEventWithoutItsRowIsStoredAtTheNextOpen) {
  namespace fs = std::filesystem;
  char tmpl[] = "/tmp/engram-intake-store-XXXXXX";
  const std::string dir = mkdtemp(tmpl);
  MemoryEventRecord e{.id = NewId("me"),
                      .workspace = "w",
                      .status = JobStatus::kPending,
                      .request_json = R"({"messages":[]})",
                      .created_at_us = 42,
                      .updated_at_us = 42};
  {
    auto first = SqliteStore::Open({.path = dir + "/a.db", .intake_journal_dir = dir + "/a"});
    ASSERT_TRUE(first.ok()) << first.status().ToString();
    std::promise<Status> done;
    (*first)->AcceptEvent(e, [&done](Status st) { done.set_value(st); });
    ASSERT_TRUE(done.get_future().get().ok());
    fs::copy(dir + "/a", dir + "/b");
    fs::copy(dir + "/a", dir + "/b2");
    ASSERT_FALSE(fs::is_empty(dir + "/b"));
  }
  // The event has not ended: its record stays in the journal across a clean stop too.
  EXPECT_FALSE(fs::is_empty(dir + "/a"));
  {
    auto second = SqliteStore::Open({.path = dir + "/b.db", .intake_journal_dir = dir + "/b"});
    ASSERT_TRUE(second.ok()) << second.status().ToString();
    auto got = (*second)->GetEvent("w", e.id);
    ASSERT_TRUE(got.ok()) << got.status().ToString();
    EXPECT_EQ(got->status, JobStatus::kPending);
    EXPECT_EQ(got->request_json, e.request_json);
    EXPECT_EQ(got->created_at_us, 42);
    auto unfinished = (*second)->UnfinishedEvents();
    ASSERT_TRUE(unfinished.ok());
    ASSERT_EQ(unfinished->size(), 1u);
    // The read-back records were dropped once stored.
    EXPECT_TRUE(fs::is_empty(dir + "/b"));
  }
  // The same records read back again (a crash before the drop) are not stored twice.
  fs::copy(dir + "/b2", dir + "/b");
  {
    auto again = SqliteStore::Open({.path = dir + "/b.db", .intake_journal_dir = dir + "/b"});
    ASSERT_TRUE(again.ok()) << again.status().ToString();
    auto unfinished = (*again)->UnfinishedEvents();
    ASSERT_TRUE(unfinished.ok());
    EXPECT_EQ(unfinished->size(), 1u);
  }
  // An event that ends has its row written with its end, and its record released.
  {
    auto first = SqliteStore::Open({.path = dir + "/a.db", .intake_journal_dir = dir + "/a"});
    ASSERT_TRUE(first.ok()) << first.status().ToString();
    auto got = (*first)->GetEvent("w", e.id);  // read back from the journal at the open
    ASSERT_TRUE(got.ok()) << got.status().ToString();
    MemoryEventRecord other = e;
    other.id = NewId("me");
    std::promise<Status> done;
    (*first)->AcceptEvent(other, [&done](Status st) { done.set_value(st); });
    ASSERT_TRUE(done.get_future().get().ok());
    for (const auto* ev : {&e, &other}) {
      MemoryChangeBatch batch;
      batch.workspace = "w";
      batch.event_id = ev->id;
      MemoryEventRecord end = *ev;
      end.status = JobStatus::kSucceeded;
      end.result_json = R"({"results":[]})";
      batch.finish_event = end;
      ASSERT_TRUE((*first)->ApplyMemoryChanges(batch).ok());
      auto finished = (*first)->GetEvent("w", ev->id);
      ASSERT_TRUE(finished.ok());
      EXPECT_EQ(finished->status, JobStatus::kSucceeded);
      EXPECT_EQ(finished->request_json, e.request_json);
      EXPECT_EQ(finished->created_at_us, 42);
    }
    auto unfinished = (*first)->UnfinishedEvents();
    ASSERT_TRUE(unfinished.ok());
    EXPECT_TRUE(unfinished->empty());
  }
  EXPECT_TRUE(fs::is_empty(dir + "/a"));
  fs::remove_all(dir);
}

}  // namespace
}  // namespace engram
