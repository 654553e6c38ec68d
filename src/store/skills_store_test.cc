// Skills, their versions and their tasks, on every Store backend (store_backends.h), plus what only
// a shared (PostgreSQL) store does: scope versions and job leases.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <thread>

#include "store_backends.h"

namespace engram {
namespace {

using namespace std::chrono_literals;

class SkillsStoreTest : public testing::LeasedStoreTest {
 protected:
  // The tasks a restart resumes: the store is closed and opened again. On PostgreSQL the tasks
  // belong to the closed node until its lease runs out; then the new node claims them.
  std::vector<SkillTaskRecord> UnfinishedAfterRestart() {
    if (!Restart()) return {};
    auto tasks = store_->UnfinishedSkillTasks();
    EXPECT_TRUE(tasks.ok()) << tasks.status().ToString();
    return tasks.ok() ? std::move(tasks).value() : std::vector<SkillTaskRecord>{};
  }

  static SkillRecord Skill(const std::string& id, const std::string& owner,
                           const std::string& name) {
    SkillRecord s;
    s.id = id;
    s.workspace = "w";
    s.owner = owner;
    s.agent_id = "agent";
    s.name = name;
    s.description = "How to " + name;
    s.version = "1.0.0";
    s.tags = {"ops", "keys"};
    s.triggers = {"rotate"};
    s.license = "MIT";
    s.metadata_json = R"({"k":"v"})";
    s.files = {{"SKILL.md", "---\nname: " + name + "\n---\nsteps"}, {"scripts/run.sh", "echo"}};
    s.created_at_us = 10;
    s.updated_at_us = 20;
    s.vector = {0.25f, -0.5f, 1.0f};
    s.vector_model = "m1";
    return s;
  }
  static SkillChange Insert(SkillRecord r) { return {SkillChange::Op::kInsert, std::move(r), {}}; }
  static SkillChange Update(SkillRecord r, std::optional<SkillRecord> previous) {
    return {SkillChange::Op::kUpdate, std::move(r), std::move(previous)};
  }
  static SkillChange Delete(const std::string& id) {
    SkillRecord r;
    r.id = id;
    return {SkillChange::Op::kDelete, std::move(r), {}};
  }
  Status Apply(std::vector<SkillChange> changes,
               std::optional<SkillTaskRecord> finish = std::nullopt) {
    return store_->ApplySkillChanges(
        {.workspace = "w", .changes = std::move(changes), .finish_task = std::move(finish)});
  }
  static SkillTaskRecord Task(const std::string& id, int64_t at) {
    return {.id = id,
            .workspace = "w",
            .status = JobStatus::kPending,
            .request_json = R"({"messages":[]})",
            .created_at_us = at,
            .updated_at_us = at};
  }
  int64_t Version(const std::string& workspace = "w") {
    auto v = store_->ScopeVersion(ScopeKeySkills(workspace));
    EXPECT_TRUE(v.ok()) << v.status().ToString();
    return v.ok() ? *v : -1;
  }

  static void ExpectSameSkill(const SkillRecord& got, const SkillRecord& want) {
    EXPECT_EQ(got.id, want.id);
    EXPECT_EQ(got.workspace, want.workspace);
    EXPECT_EQ(got.owner, want.owner);
    EXPECT_EQ(got.agent_id, want.agent_id);
    EXPECT_EQ(got.name, want.name);
    EXPECT_EQ(got.description, want.description);
    EXPECT_EQ(got.version, want.version);
    EXPECT_EQ(got.tags, want.tags);
    EXPECT_EQ(got.triggers, want.triggers);
    EXPECT_EQ(got.license, want.license);
    EXPECT_EQ(got.metadata_json, want.metadata_json);
    EXPECT_EQ(got.files, want.files);
    EXPECT_EQ(got.created_at_us, want.created_at_us);
    EXPECT_EQ(got.updated_at_us, want.updated_at_us);
    EXPECT_EQ(got.vector, want.vector);
    EXPECT_EQ(got.vector_model, want.vector_model);
  }
};

TEST_P(SkillsStoreTest, InsertGetLoad) {
  SkillRecord a = Skill("s-a", "u1", "rotate-keys");
  SkillRecord b = Skill("s-b", "u1", "deploy");
  b.vector.clear();  // no embedding: stored as none
  b.vector_model = "ignored without a vector";
  b.metadata_json.clear();  // stored as {}
  ASSERT_TRUE(Apply({Insert(a), Insert(b)}).ok());

  auto got = store_->GetSkill("w", "s-a");
  ASSERT_TRUE(got.ok()) << got.status().ToString();
  ExpectSameSkill(*got, a);

  auto got_b = store_->GetSkill("w", "s-b");
  ASSERT_TRUE(got_b.ok());
  EXPECT_TRUE(got_b->vector.empty());
  EXPECT_EQ(got_b->vector_model, "");
  EXPECT_EQ(got_b->metadata_json, "{}");

  auto all = store_->LoadSkills("w");
  ASSERT_TRUE(all.ok());
  ASSERT_EQ(all->size(), 2u);
  std::vector<std::string> ids = {(*all)[0].id, (*all)[1].id};
  std::sort(ids.begin(), ids.end());
  EXPECT_EQ(ids, (std::vector<std::string>{"s-a", "s-b"}));

  EXPECT_TRUE(store_->LoadSkills("other")->empty());
  EXPECT_EQ(store_->GetSkill("other", "s-a").status().code(), StatusCode::kNotFound);
  EXPECT_EQ(store_->GetSkill("w", "s-missing").status().code(), StatusCode::kNotFound);
  EXPECT_TRUE(store_->GetSkillVersions("w", "s-a")->empty());
}

TEST_P(SkillsStoreTest, UpdateRecordsAVersion) {
  SkillRecord v1 = Skill("s-a", "u1", "rotate-keys");
  ASSERT_TRUE(Apply({Insert(v1)}).ok());

  SkillRecord v2 = v1;
  v2.version = "1.0.1";
  v2.description = "Rotate keys, revoking the old one";
  v2.files["SKILL.md"] = "new steps";
  v2.updated_at_us = 30;
  v2.vector.clear();  // an update replaces every column: the old vector goes
  ASSERT_TRUE(Apply({Update(v2, v1)}).ok());

  auto got = store_->GetSkill("w", "s-a");
  ASSERT_TRUE(got.ok());
  EXPECT_EQ(got->version, "1.0.1");
  EXPECT_EQ(got->files.at("SKILL.md"), "new steps");
  EXPECT_TRUE(got->vector.empty());
  EXPECT_EQ(got->vector_model, "");

  SkillRecord v3 = v2;
  v3.version = "1.0.2";
  ASSERT_TRUE(Apply({Update(v3, v2)}).ok());
  // An update without a previous state records none.
  ASSERT_TRUE(Apply({Update(v3, std::nullopt)}).ok());

  auto versions = store_->GetSkillVersions("w", "s-a");
  ASSERT_TRUE(versions.ok());
  ASSERT_EQ(versions->size(), 2u);  // oldest first
  EXPECT_EQ((*versions)[0].skill_id, "s-a");
  EXPECT_EQ((*versions)[0].version, "1.0.0");
  EXPECT_EQ((*versions)[1].version, "1.0.1");
  EXPECT_GT((*versions)[0].replaced_at_us, 0);
  EXPECT_NE((*versions)[0].snapshot_json.find("\"description\":\"How to rotate-keys\""),
            std::string::npos)
      << (*versions)[0].snapshot_json;
  EXPECT_NE((*versions)[1].snapshot_json.find("new steps"), std::string::npos);
  EXPECT_TRUE(store_->GetSkillVersions("other", "s-a")->empty());

  // Deleting a skill drops its versions too.
  ASSERT_TRUE(Apply({Delete("s-a")}).ok());
  EXPECT_EQ(store_->GetSkill("w", "s-a").status().code(), StatusCode::kNotFound);
  EXPECT_TRUE(store_->GetSkillVersions("w", "s-a")->empty());
}

TEST_P(SkillsStoreTest, AnOwnersDuplicateNameIsAConflict) {
  ASSERT_TRUE(Apply({Insert(Skill("s-a", "u1", "rotate-keys"))}).ok());
  ASSERT_TRUE(Apply({Insert(Skill("s-b", "u1", "deploy"))}).ok());

  EXPECT_EQ(Apply({Insert(Skill("s-c", "u1", "rotate-keys"))}).code(), StatusCode::kConflict);
  // Renaming onto another skill's name is one too.
  EXPECT_EQ(Apply({Update(Skill("s-b", "u1", "rotate-keys"), std::nullopt)}).code(),
            StatusCode::kConflict);
  // The batch is atomic: a good change before the conflicting one is not kept.
  EXPECT_EQ(
      Apply({Insert(Skill("s-d", "u1", "fresh")), Insert(Skill("s-e", "u1", "deploy"))}).code(),
      StatusCode::kConflict);
  EXPECT_EQ(store_->GetSkill("w", "s-d").status().code(), StatusCode::kNotFound);
  EXPECT_EQ(store_->GetSkill("w", "s-b")->name, "deploy");

  // Another owner, or the same skill keeping its name, is fine.
  EXPECT_TRUE(Apply({Insert(Skill("s-f", "u2", "rotate-keys"))}).ok());
  EXPECT_TRUE(Apply({Update(Skill("s-a", "u1", "rotate-keys"), std::nullopt)}).ok());
  EXPECT_EQ(store_->LoadSkills("w")->size(), 3u);
}

TEST_P(SkillsStoreTest, UpdateOrDeleteOfAGoneSkillIsNotFound) {
  ASSERT_TRUE(Apply({Insert(Skill("s-a", "u1", "rotate-keys"))}).ok());
  EXPECT_EQ(Apply({Update(Skill("s-gone", "u1", "other"), std::nullopt)}).code(),
            StatusCode::kNotFound);
  EXPECT_EQ(Apply({Delete("s-gone")}).code(), StatusCode::kNotFound);

  // Atomic: the delete of s-a before the failing update is undone.
  EXPECT_EQ(Apply({Delete("s-a"), Update(Skill("s-gone", "u1", "x"), std::nullopt)}).code(),
            StatusCode::kNotFound);
  EXPECT_TRUE(store_->GetSkill("w", "s-a").ok());

  ASSERT_TRUE(Apply({Delete("s-a")}).ok());
  EXPECT_EQ(Apply({Delete("s-a")}).code(), StatusCode::kNotFound);
  // A skill of another workspace is gone for this one.
  ASSERT_TRUE(
      store_->ApplySkillChanges({.workspace = "w2", .changes = {Insert(Skill("s-x", "u1", "x"))}})
          .ok());
  EXPECT_EQ(Apply({Delete("s-x")}).code(), StatusCode::kNotFound);
  EXPECT_TRUE(store_->GetSkill("w2", "s-x").ok());
}

TEST_P(SkillsStoreTest, TasksInsertGetUnfinished) {
  SkillTaskRecord t2 = Task("st-2", 200);
  SkillTaskRecord t1 = Task("st-1", 100);
  t1.status = JobStatus::kRunning;
  ASSERT_TRUE(store_->InsertSkillTask(t2).ok());
  ASSERT_TRUE(store_->InsertSkillTask(t1).ok());
  SkillTaskRecord done = Task("st-3", 50);
  done.status = JobStatus::kSucceeded;
  done.skill_ids = {"s-a"};
  ASSERT_TRUE(store_->InsertSkillTask(done).ok());

  auto got = store_->GetSkillTask("w", "st-1");
  ASSERT_TRUE(got.ok()) << got.status().ToString();
  EXPECT_EQ(got->id, "st-1");
  EXPECT_EQ(got->workspace, "w");
  EXPECT_EQ(got->status, JobStatus::kRunning);
  EXPECT_EQ(got->request_json, R"({"messages":[]})");
  EXPECT_TRUE(got->skill_ids.empty());
  EXPECT_EQ(got->created_at_us, 100);
  EXPECT_EQ(got->updated_at_us, 100);
  EXPECT_EQ(store_->GetSkillTask("w", "st-3")->skill_ids, (std::vector<std::string>{"s-a"}));
  EXPECT_EQ(store_->GetSkillTask("other", "st-1").status().code(), StatusCode::kNotFound);
  EXPECT_EQ(store_->GetSkillTask("w", "st-missing").status().code(), StatusCode::kNotFound);

  auto unfinished = UnfinishedAfterRestart();
  ASSERT_EQ(unfinished.size(), 2u);
  EXPECT_EQ(unfinished[0].id, "st-1");  // oldest first
  EXPECT_EQ(unfinished[1].id, "st-2");
  EXPECT_EQ(unfinished[1].request_json, R"({"messages":[]})");
}

TEST_P(SkillsStoreTest, ListSkillTasksPagesNewestFirst) {
  for (int i = 0; i < 5; ++i) {
    ASSERT_TRUE(store_->InsertSkillTask(Task("st-" + std::to_string(i), 100 + i)).ok());
  }
  // Same time: the id breaks the tie, descending.
  ASSERT_TRUE(store_->InsertSkillTask(Task("st-9", 104)).ok());
  SkillTaskRecord elsewhere = Task("st-other", 500);
  elsewhere.workspace = "other";
  ASSERT_TRUE(store_->InsertSkillTask(elsewhere).ok());

  size_t total = 0;
  auto all = store_->ListSkillTasks("w", 0, 100, &total);
  ASSERT_TRUE(all.ok()) << all.status().ToString();
  EXPECT_EQ(total, 6u);
  std::vector<std::string> ids;
  for (const auto& t : *all) ids.push_back(t.id);
  EXPECT_EQ(ids, (std::vector<std::string>{"st-9", "st-4", "st-3", "st-2", "st-1", "st-0"}));
  EXPECT_EQ((*all)[0].request_json, R"({"messages":[]})");

  auto page = store_->ListSkillTasks("w", 2, 2, &total);
  ASSERT_TRUE(page.ok());
  ASSERT_EQ(page->size(), 2u);
  EXPECT_EQ((*page)[0].id, "st-3");
  EXPECT_EQ((*page)[1].id, "st-2");
  EXPECT_EQ(total, 6u);
  EXPECT_TRUE(store_->ListSkillTasks("w", 6, 10, &total)->empty());
  EXPECT_EQ(store_->ListSkillTasks("w", SIZE_MAX, SIZE_MAX, &total)->size(), 0u);
  EXPECT_EQ(store_->ListSkillTasks("w", 0, SIZE_MAX, &total)->size(), 6u);
  EXPECT_TRUE(store_->ListSkillTasks("nobody", 0, 10, &total)->empty());
  EXPECT_EQ(total, 0u);
}

TEST_P(SkillsStoreTest, ApplyingChangesFinishesTheirTask) {
  ASSERT_TRUE(store_->InsertSkillTask(Task("st-1", 100)).ok());
  ASSERT_TRUE(store_->InsertSkillTask(Task("st-2", 200)).ok());

  SkillTaskRecord finished = Task("st-1", 100);
  finished.status = JobStatus::kSucceeded;
  finished.skill_ids = {"s-a", "s-b"};
  ASSERT_TRUE(
      Apply({Insert(Skill("s-a", "u1", "one")), Insert(Skill("s-b", "u1", "two"))}, finished).ok());
  auto got = store_->GetSkillTask("w", "st-1");
  ASSERT_TRUE(got.ok());
  EXPECT_EQ(got->status, JobStatus::kSucceeded);
  EXPECT_EQ(got->skill_ids, (std::vector<std::string>{"s-a", "s-b"}));
  EXPECT_GT(got->updated_at_us, 100);

  // A failing batch leaves its task as it was.
  SkillTaskRecord failed = Task("st-2", 200);
  failed.status = JobStatus::kSucceeded;
  EXPECT_EQ(Apply({Insert(Skill("s-c", "u1", "one"))}, failed).code(), StatusCode::kConflict);
  EXPECT_EQ(store_->GetSkillTask("w", "st-2")->status, JobStatus::kPending);

  // A task can end without changes (e.g. failed).
  failed.status = JobStatus::kFailed;
  failed.error_message = "no skill found";
  ASSERT_TRUE(Apply({}, failed).ok());
  EXPECT_EQ(store_->GetSkillTask("w", "st-2")->error_message, "no skill found");

  EXPECT_TRUE(UnfinishedAfterRestart().empty());
}

// --- PostgreSQL only: what several nodes on one store rely on ---

TEST_P(SkillsStoreTest, WritesBumpTheScopeVersion) {
  if (!is_postgres()) GTEST_SKIP() << "scope versions belong to shared stores";
  EXPECT_EQ(Version(), 0);
  int64_t last = 0;
  auto expect_bumped = [&](const char* what) {
    const int64_t now = Version();
    EXPECT_GT(now, last) << what;
    last = now;
  };
  SkillRecord a = Skill("s-a", "u1", "one");
  ASSERT_TRUE(Apply({Insert(a)}).ok());
  expect_bumped("insert");
  SkillRecord a2 = a;
  a2.version = "1.0.1";
  ASSERT_TRUE(Apply({Update(a2, a)}).ok());
  expect_bumped("update");
  // Tasks are not cached by any node: they leave the version alone.
  ASSERT_TRUE(store_->InsertSkillTask(Task("st-1", 1)).ok());
  EXPECT_EQ(Version(), last) << "task insert";
  SkillTaskRecord done = Task("st-1", 1);
  done.status = JobStatus::kFailed;
  ASSERT_TRUE(Apply({}, done).ok());
  EXPECT_EQ(Version(), last) << "task end";
  ASSERT_TRUE(Apply({Delete("s-a")}).ok());
  expect_bumped("delete");

  EXPECT_EQ(Apply({Delete("s-a")}).code(), StatusCode::kNotFound);
  EXPECT_EQ(Version(), last) << "a failed batch is rolled back, version included";
  EXPECT_EQ(Version("other"), 0) << "another workspace is another scope";
}

TEST_P(SkillsStoreTest, RefusesNulBytes) {
  if (!is_postgres()) GTEST_SKIP() << "SQLite text holds NUL bytes";
  SkillRecord s = Skill("s-a", "u1", "one");
  s.description = std::string("a\0b", 3);
  Status st = Apply({Insert(s)});
  EXPECT_EQ(st.code(), StatusCode::kInvalidParameter);
  EXPECT_NE(st.message().find("description"), std::string::npos) << st.message();
  // NUL bytes inside JSON columns (files, tags) are escaped, so they are fine.
  s = Skill("s-a", "u1", "one");
  s.files["SKILL.md"] = std::string("x\0y", 3);
  ASSERT_TRUE(Apply({Insert(s)}).ok());
  EXPECT_EQ(store_->GetSkill("w", "s-a")->files.at("SKILL.md"), std::string("x\0y", 3));

  SkillTaskRecord t = Task("st-1", 1);
  t.request_json = std::string("{\0}", 3);
  EXPECT_EQ(store_->InsertSkillTask(t).code(), StatusCode::kInvalidParameter);
  EXPECT_EQ(store_->GetSkill("w", std::string("s-a\0x", 5)).status().code(), StatusCode::kNotFound);
}

TEST_P(SkillsStoreTest, AnotherNodeTakesOverWhenTheLeaseRunsOut) {
  if (!is_postgres()) GTEST_SKIP() << "job leases belong to shared stores";
  store_.reset();
  auto a = OpenStore({.node_id = "a", .lease = 300ms});
  auto b = OpenStore({.node_id = "b", .lease = 300ms});
  ASSERT_TRUE(a && b);
  ASSERT_TRUE(a->InsertSkillTask(Task("st-1", 1)).ok());

  EXPECT_TRUE(b->UnfinishedSkillTasks()->empty()) << "node a holds the task";
  std::this_thread::sleep_for(700ms);  // over two leases: a renews meanwhile
  EXPECT_TRUE(b->UnfinishedSkillTasks()->empty()) << "node a renewed its lease";

  a.reset();  // node a dies; its lease runs out
  ExpireLeases();
  auto claimed = b->UnfinishedSkillTasks();
  ASSERT_TRUE(claimed.ok()) << claimed.status().ToString();
  ASSERT_EQ(claimed->size(), 1u);
  EXPECT_EQ((*claimed)[0].id, "st-1");
  EXPECT_TRUE(b->UnfinishedSkillTasks()->empty()) << "claimed once";
}

ENGRAM_INSTANTIATE_STORE_BACKENDS(SkillsStoreTest);

}  // namespace
}  // namespace engram
