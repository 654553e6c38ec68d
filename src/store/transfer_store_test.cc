// The TransferStore contract on every backend (store_backends.h): the scopes a store lists, and
// agent memories and skills written as exported, once.
#include <gtest/gtest.h>

#include "memory_records.h"
#include "store_backends.h"

namespace engram {
namespace {

using Pairs = std::vector<std::pair<std::string, std::string>>;
using Names = std::vector<std::string>;

class TransferStoreTest : public testing::StoreBackendTest {
 protected:
  void SetUp() override {
    StoreBackendTest::SetUp();
    if (IsSkipped()) return;
    store_ = OpenStore();
    ASSERT_NE(store_, nullptr);
  }

  static AgentMemoryImport Memory(const std::string& workspace, const std::string& id) {
    AgentMemoryImport item;
    MemoryRecord& m = item.memory;
    m.id = id;
    m.workspace = workspace;
    m.user_id = "alice";
    m.app_id = "app";
    m.text = "prefers green tea";
    m.metadata_json = R"({"k":"v"})";
    m.categories = {"food"};
    m.created_at_us = 1000;
    m.updated_at_us = 2000;
    m.expires_at_us = 9000;
    m.vector = {0.5f, -0.25f};
    m.vector_model = "m1";
    m.provenance_json = R"({"event_id":"me-1"})";
    HistoryRecord add;
    add.memory_id = id;
    add.event = "ADD";
    add.new_text = "likes tea";
    add.new_metadata_json = "{}";
    add.event_id = "me-1";
    add.at_us = 1000;
    HistoryRecord update = add;
    update.event = "UPDATE";
    update.old_text = "likes tea";
    update.old_metadata_json = "{}";
    update.new_text = m.text;
    update.new_metadata_json = m.metadata_json;
    update.at_us = 2000;
    update.provenance_json = m.provenance_json;
    item.history = {add, update};
    item.feedback = {{.id = "mf-1",
                      .memory_id = id,
                      .feedback = "POSITIVE",
                      .reason = "right",
                      .created_at_us = 3000}};
    return item;
  }

  static SkillRecord Skill(const std::string& id, const std::string& name) {
    SkillRecord s;
    s.id = id;
    s.workspace = "w";
    s.owner = "alice";
    s.name = name;
    s.description = "How to " + name;
    s.version = "2.0.0";
    s.files = {{"SKILL.md", "---\nname: " + name + "\n---\nsteps"}};
    s.created_at_us = 10;
    s.updated_at_us = 20;
    s.vector = {1.0f, 0.0f};
    s.vector_model = "m1";
    return s;
  }

  std::unique_ptr<Store> store_;
};

TEST_P(TransferStoreTest, ListsEveryScopeThatHoldsData) {
  auto empty = store_->ListStoredScopes();
  ASSERT_TRUE(empty.ok()) << empty.status().ToString();
  EXPECT_TRUE(empty->leaderboard_users.empty());
  EXPECT_TRUE(empty->knowledge_bases.empty());

  for (const auto& [ws, user] : Pairs{{"w2", "u1"}, {"w1", "u2"}, {"w1", "u1"}, {"w1", "u1"}}) {
    MemoryRecord m = testing::TestMemory(user, "hello");
    m.workspace = ws;
    AddBatch batch;
    batch.memories = {m};
    ASSERT_TRUE(store_->Add(std::move(batch)).ok());
  }
  ASSERT_TRUE(store_->ImportAgentMemory(Memory("w3", NewId("m"))).ok());
  ASSERT_TRUE(store_->ImportSkill(Skill(NewId("s"), "rotate"), {}).ok());
  KbDocRecord doc{.workspace = "w1", .kb_id = "kb", .id = "d1", .job_id = "j1", .title = "t"};
  doc.source_type = "LOCAL";
  ASSERT_TRUE(store_->PutKbDoc(doc).ok());

  auto scopes = store_->ListStoredScopes();
  ASSERT_TRUE(scopes.ok()) << scopes.status().ToString();
  EXPECT_EQ(scopes->leaderboard_users, (Pairs{{"w1", "u1"}, {"w1", "u2"}, {"w2", "u1"}}));
  EXPECT_EQ(scopes->memory_workspaces, Names{"w3"});
  EXPECT_EQ(scopes->skill_workspaces, Names{"w"});
  EXPECT_EQ(scopes->knowledge_bases, (Pairs{{"w1", "kb"}}));
}

TEST_P(TransferStoreTest, ImportsAnAgentMemoryAsExportedOnce) {
  const AgentMemoryImport item = Memory("w", "m-import-1");
  const int64_t version_before = store_->ScopeVersion(ScopeKeyAgentMemories("w")).value();
  auto first = store_->ImportAgentMemory(item);
  ASSERT_TRUE(first.ok()) << first.status().ToString();
  EXPECT_TRUE(*first);
  if (is_postgres()) {
    EXPECT_GT(store_->ScopeVersion(ScopeKeyAgentMemories("w")).value(), version_before);
  }

  auto loaded = store_->LoadAgentMemories("w");
  ASSERT_TRUE(loaded.ok());
  ASSERT_EQ(loaded->size(), 1u);
  const MemoryRecord& m = loaded->front();
  EXPECT_EQ(m.id, item.memory.id);
  EXPECT_EQ(m.text, item.memory.text);
  EXPECT_EQ(m.app_id, "app");
  EXPECT_EQ(m.categories, item.memory.categories);
  EXPECT_EQ(m.created_at_us, 1000);
  EXPECT_EQ(m.updated_at_us, 2000);
  EXPECT_EQ(m.expires_at_us, std::optional<int64_t>(9000));
  EXPECT_EQ(m.vector, item.memory.vector);
  EXPECT_EQ(m.vector_model, "m1");
  EXPECT_EQ(m.provenance_json, item.memory.provenance_json);

  auto history = store_->GetHistory("w", item.memory.id);
  ASSERT_TRUE(history.ok());
  ASSERT_EQ(history->size(), 2u);
  EXPECT_EQ((*history)[0].event, "ADD");
  EXPECT_EQ((*history)[0].old_text, std::nullopt);
  EXPECT_EQ((*history)[1].event, "UPDATE");
  EXPECT_EQ((*history)[1].old_text, std::optional<std::string>("likes tea"));
  EXPECT_EQ((*history)[1].at_us, 2000);
  EXPECT_EQ((*history)[1].provenance_json, item.memory.provenance_json);
  auto feedback = store_->GetFeedback("w", item.memory.id);
  ASSERT_TRUE(feedback.ok());
  ASSERT_EQ(feedback->size(), 1u);
  EXPECT_EQ(feedback->front().reason, "right");

  // Run again: nothing more is written.
  auto again = store_->ImportAgentMemory(item);
  ASSERT_TRUE(again.ok()) << again.status().ToString();
  EXPECT_FALSE(*again);
  EXPECT_EQ(store_->GetHistory("w", item.memory.id)->size(), 2u);
  EXPECT_EQ(store_->GetFeedback("w", item.memory.id)->size(), 1u);

  // The id of another workspace's memory is not taken over.
  auto elsewhere = store_->ImportAgentMemory(Memory("other", item.memory.id));
  EXPECT_EQ(elsewhere.status().code(), StatusCode::kConflict);
  EXPECT_TRUE(store_->LoadAgentMemories("other")->empty());
}

TEST_P(TransferStoreTest, ImportsASkillWithItsVersionsOnce) {
  const SkillRecord skill = Skill("s-import-1", "rotate");
  const std::vector<SkillVersionRecord> versions = {
      {skill.id, "1.0.0", R"({"name":"rotate","version":"1.0.0"})", 15}};
  auto first = store_->ImportSkill(skill, versions);
  ASSERT_TRUE(first.ok()) << first.status().ToString();
  EXPECT_TRUE(*first);

  auto got = store_->GetSkill("w", skill.id);
  ASSERT_TRUE(got.ok());
  EXPECT_EQ(got->files, skill.files);
  EXPECT_EQ(got->created_at_us, 10);
  EXPECT_EQ(got->vector, skill.vector);
  auto stored_versions = store_->GetSkillVersions("w", skill.id);
  ASSERT_TRUE(stored_versions.ok());
  ASSERT_EQ(stored_versions->size(), 1u);
  EXPECT_EQ(stored_versions->front().snapshot_json, versions.front().snapshot_json);
  EXPECT_EQ(stored_versions->front().replaced_at_us, 15);

  const int64_t version_before = store_->ScopeVersion(ScopeKeySkills("w")).value();
  auto again = store_->ImportSkill(skill, versions);
  ASSERT_TRUE(again.ok()) << again.status().ToString();
  EXPECT_FALSE(*again);
  // Nothing written, so nothing for other nodes to reload.
  EXPECT_EQ(store_->ScopeVersion(ScopeKeySkills("w")).value(), version_before);
  EXPECT_EQ(store_->GetSkillVersions("w", skill.id)->size(), 1u);

  // Another skill of the same owner and name is refused, as the skills API refuses it.
  auto clash = store_->ImportSkill(Skill("s-import-2", "rotate"), {});
  EXPECT_EQ(clash.status().code(), StatusCode::kConflict);
  EXPECT_EQ(store_->LoadSkills("w")->size(), 1u);
}

ENGRAM_INSTANTIATE_STORE_BACKENDS(TransferStoreTest);

}  // namespace
}  // namespace engram
