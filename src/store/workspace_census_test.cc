// The WorkspaceCensus contract on every backend (store_backends.h): each workspace's counts, from
// every table, with unfinished jobs apart and events still only acknowledged counted once.
#include <gtest/gtest.h>

#include <future>

#include "common/ids.h"
#include "memory_records.h"
#include "store_backends.h"

namespace engram {
namespace {

class WorkspaceCensusTest : public testing::StoreBackendTest {
 protected:
  void SetUp() override {
    StoreBackendTest::SetUp();
    if (IsSkipped()) return;
    store_ = OpenStore();
    ASSERT_NE(store_, nullptr);
  }

  void AddMessage(const std::string& workspace, const std::string& user) {
    MemoryRecord m = testing::TestMemory(user, "hello");
    m.workspace = workspace;
    AddBatch batch;
    batch.memories = {m};
    ASSERT_TRUE(store_->Add(std::move(batch)).ok());
  }

  void AddAgentMemory(const std::string& workspace, const std::string& user) {
    AgentMemoryImport item;
    item.memory.id = NewId("m");
    item.memory.workspace = workspace;
    item.memory.user_id = user;
    item.memory.text = "prefers tea";
    item.memory.created_at_us = item.memory.updated_at_us = 1000;
    ASSERT_TRUE(store_->ImportAgentMemory(item).ok());
  }

  MemoryEventRecord Event(const std::string& workspace) {
    return {.id = NewId("me"),
            .workspace = workspace,
            .status = JobStatus::kPending,
            .request_json = R"({"messages":[]})",
            .created_at_us = 42,
            .updated_at_us = 42};
  }

  std::unique_ptr<Store> store_;
};

TEST_P(WorkspaceCensusTest, CountsWhatEachWorkspaceHolds) {
  auto empty = store_->CountWorkspaces();
  ASSERT_TRUE(empty.ok()) << empty.status().ToString();
  EXPECT_TRUE(empty->empty());

  // Leaderboard: two users in "lb", three messages.
  AddMessage("lb", "u1");
  AddMessage("lb", "u1");
  AddMessage("lb", "u2");
  // Agent memories: three in "w", of two users (one memory has no user).
  AddAgentMemory("w", "alice");
  AddAgentMemory("w", "alice");
  AddAgentMemory("w", "bob");
  AddAgentMemory("w", "");
  // Events in "w": one ended, one pending, one only acknowledged (SQLite: in the intake journal).
  MemoryEventRecord ended = Event("w");
  ASSERT_TRUE(store_->InsertEvent(ended).ok());
  ended.status = JobStatus::kSucceeded;
  ASSERT_TRUE(store_->ApplyMemoryChanges({.workspace = "w", .finish_event = ended}).ok());
  ASSERT_TRUE(store_->InsertEvent(Event("w")).ok());
  std::promise<Status> accepted;
  store_->AcceptEvent(Event("w"), [&](Status st) { accepted.set_value(st); });
  ASSERT_TRUE(accepted.get_future().get().ok());
  // Skills and tasks in "s": two skills of one owner, a failed task and a running one.
  for (const char* name : {"rotate", "deploy"}) {
    SkillRecord skill{.id = NewId("s"), .workspace = "s", .owner = "alice", .name = name};
    skill.files = {{"SKILL.md", "---\nname: x\n---\nsteps"}};
    ASSERT_TRUE(store_->ImportSkill(skill, {}).ok());
  }
  for (JobStatus status : {JobStatus::kFailed, JobStatus::kRunning}) {
    ASSERT_TRUE(store_
                    ->InsertSkillTask({.id = NewId("st"),
                                       .workspace = "s",
                                       .status = status,
                                       .request_json = "{}",
                                       .created_at_us = 1,
                                       .updated_at_us = 1})
                    .ok());
  }
  // Knowledge bases in "w": two of them, three documents, one still processing.
  for (const auto& [kb, id] : std::vector<std::pair<std::string, std::string>>{
           {"kb1", "d1"}, {"kb1", "d2"}, {"kb2", "d3"}}) {
    KbDocRecord doc{.workspace = "w", .kb_id = kb, .id = id, .job_id = "j-" + id, .title = "t"};
    doc.source_type = "LOCAL";
    ASSERT_TRUE(store_->PutKbDoc(doc).ok());
    if (id == "d3") continue;
    doc.status = JobStatus::kSucceeded;
    ASSERT_TRUE(store_->FinishKbDoc(doc, {}).ok());
  }

  auto census = store_->CountWorkspaces();
  ASSERT_TRUE(census.ok()) << census.status().ToString();
  ASSERT_EQ(census->size(), 3u);
  const WorkspaceCounts& lb = (*census)[0];
  const WorkspaceCounts& s = (*census)[1];
  const WorkspaceCounts& w = (*census)[2];
  EXPECT_EQ(lb.workspace, "lb");
  EXPECT_EQ(lb.leaderboard_users, 2);
  EXPECT_EQ(lb.leaderboard_messages, 3);
  EXPECT_EQ(lb.memories, 0);
  EXPECT_EQ(s.workspace, "s");
  EXPECT_EQ(s.skills, 2);
  EXPECT_EQ(s.skill_owners, 1);
  EXPECT_EQ(s.skill_tasks, 2);
  EXPECT_EQ(s.skill_tasks_unfinished, 1);
  EXPECT_EQ(w.workspace, "w");
  EXPECT_EQ(w.memories, 4);
  EXPECT_EQ(w.memory_users, 2);
  EXPECT_EQ(w.memory_events, 3);
  EXPECT_EQ(w.memory_events_unfinished, 2);
  EXPECT_EQ(w.knowledge_bases, 2);
  EXPECT_EQ(w.documents, 3);
  EXPECT_EQ(w.documents_processing, 1);
  EXPECT_EQ(w.leaderboard_users, 0);
}

}  // namespace

ENGRAM_INSTANTIATE_STORE_BACKENDS(WorkspaceCensusTest);

}  // namespace engram
