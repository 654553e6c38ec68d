#include "core/skill_index.h"

#include <gtest/gtest.h>

namespace engram {
namespace {

SkillRecord Skill(const std::string& id, const std::string& owner, const std::string& name,
                  const std::string& description, const std::string& agent = "") {
  SkillRecord r;
  r.id = id;
  r.owner = owner;
  r.agent_id = agent;
  r.name = name;
  r.description = description;
  r.files["SKILL.md"] = "---\nname: " + name + "\ndescription: x\n---\nbody";
  return r;
}

class SkillIndexTest : public ::testing::Test {
 protected:
  SkillIndexTest() : index_(&analyzer_, SkillIndexOptions{.vectors = {.dim = 2}}) {}
  std::vector<std::string> Ids(const std::string& query, const std::string& user,
                               const std::string& agent = "") {
    SkillQuery q;
    q.terms = analyzer_.AnalyzeQuery(query);
    q.user_id = user;
    q.agent_id = agent;
    std::vector<std::string> out;
    for (const auto& h : index_.Search(q)) out.push_back(h.skill.id);
    return out;
  }
  Analyzer analyzer_;
  SkillIndex index_;
};

TEST_F(SkillIndexTest, RanksTheMatchingSkillFirstWithinTheOwner) {
  index_.Upsert(Skill("s-1", "u1", "deploy-web-app", "Deploy the web app to staging"));
  index_.Upsert(Skill("s-2", "u1", "reset-router", "Reset the router password"));
  index_.Upsert(Skill("s-3", "u2", "deploy-web-app", "Deploy the web app"));
  EXPECT_EQ(Ids("how do I deploy to staging", "u1"), std::vector<std::string>{"s-1"});
  EXPECT_EQ(Ids("router", "u1"), std::vector<std::string>{"s-2"});
  EXPECT_EQ(Ids("deploy", "u2"), std::vector<std::string>{"s-3"});
  EXPECT_TRUE(Ids("deploy", "nobody").empty());
  EXPECT_EQ(index_.IdByName("u1", "reset-router"), "s-2");
}

TEST_F(SkillIndexTest, AgentScopeUpdateAndRemove) {
  index_.Upsert(Skill("s-1", "u1", "brew-coffee", "Brew coffee", "a1"));
  index_.Upsert(Skill("s-2", "u1", "brew-tea", "Brew tea", "a2"));
  EXPECT_EQ(Ids("brew", "u1", "a2"), std::vector<std::string>{"s-2"});
  index_.Upsert(Skill("s-2", "u1", "steep-tea", "Steep green tea", "a2"));
  EXPECT_TRUE(Ids("brew", "u1", "a2").empty());
  EXPECT_EQ(Ids("green", "u1"), std::vector<std::string>{"s-2"});
  EXPECT_FALSE(index_.IdByName("u1", "brew-tea"));
  index_.Remove("s-1");
  EXPECT_TRUE(Ids("coffee", "u1").empty());
  EXPECT_EQ(index_.size(), 1u);
}

}  // namespace
}  // namespace engram

namespace engram {
namespace {

TEST(SkillIndexIsolationTest, AnotherUsersSkillsDoNotChangeAUsersRanking) {
  // BM25 scores with the owner's statistics: u2 writing "web" everywhere makes the word common in
  // the workspace, but not for u1, whose scores stay what they were.
  Analyzer analyzer;
  SkillIndex index(&analyzer, SkillIndexOptions{.vectors = {.dim = 2}});
  index.Upsert(Skill("a", "u1", "deploy-web-app", "Deploy the web app"));
  index.Upsert(Skill("b", "u1", "backup-database", "Back up the database nightly"));
  index.Upsert(Skill("c", "u1", "rotate-web-keys", "Rotate the keys of the web database"));
  SkillQuery q;
  q.terms = analyzer.AnalyzeQuery("web database");
  q.user_id = "u1";
  const auto alone = index.Search(q);
  for (int i = 0; i < 30; ++i) {
    index.Upsert(Skill("x" + std::to_string(i), "u2", "web-" + std::to_string(i), "web web web"));
  }
  const auto shared = index.Search(q);
  ASSERT_EQ(alone.size(), shared.size());
  ASSERT_FALSE(alone.empty());
  for (size_t i = 0; i < alone.size(); ++i) {
    EXPECT_EQ(alone[i].skill.id, shared[i].skill.id);
    EXPECT_FLOAT_EQ(alone[i].score, shared[i].score);
  }
}

}  // namespace
}  // namespace engram
