#include "core/skill_service.h"

#include <gtest/gtest.h>
#include <stdlib.h>

#include <chrono>
#include <filesystem>
#include <thread>

#include "store/sqlite_store.h"

namespace engram {
namespace {

class SkillServiceTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/skill_service_test.XXXXXX";
    dir_ = mkdtemp(tmpl);
    Open();
  }
  void TearDown() override {
    service_.reset();
    store_.reset();
    std::filesystem::remove_all(dir_);
  }
  void Open() {
    service_.reset();
    store_.reset();
    auto s = SqliteStore::Open({.path = dir_ + "/engram.db"});
    ASSERT_TRUE(s.ok()) << s.status().ToString();
    store_ = std::move(*s);
    service_ = std::make_unique<SkillService>(store_.get(), &analyzer_, nullptr, &extractor_,
                                              SkillServiceOptions{});
  }
  SkillTaskRecord Wait(const std::string& id) {
    for (int i = 0; i < 500; ++i) {
      auto t = service_->GetTask("default", id);
      EXPECT_TRUE(t.ok());
      if (IsFinished(t->status)) return *t;
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    ADD_FAILURE() << "task did not finish";
    return {};
  }
  SkillAddRequest HowTo(const std::string& user, const std::string& last_step) {
    return {"default",
            {{"user", "How do I rotate the API keys?", 0},
             {"assistant", "1. Open the console.\n2. Create a new key.\n3. " + last_step, 0}},
            user,
            ""};
  }

  std::string dir_;
  Analyzer analyzer_;
  BuiltinSkillExtractor extractor_;
  std::unique_ptr<SqliteStore> store_;
  std::unique_ptr<SkillService> service_;
};

TEST_F(SkillServiceTest, SameNameBecomesANewVersion) {
  ASSERT_TRUE(service_->Start().ok());
  auto id1 = service_->Add(HowTo("u1", "Delete the old key."));
  ASSERT_TRUE(id1.ok());
  SkillTaskRecord t1 = Wait(*id1);
  ASSERT_EQ(t1.status, JobStatus::kSucceeded) << t1.error_message;
  ASSERT_EQ(t1.skill_ids.size(), 1u);
  auto id2 = service_->Add(HowTo("u1", "Revoke the old key after a day."));
  SkillTaskRecord t2 = Wait(*id2);
  ASSERT_EQ(t2.skill_ids, t1.skill_ids);
  auto skill = service_->Get("default", t1.skill_ids[0], "u1");
  ASSERT_TRUE(skill.ok());
  EXPECT_EQ(skill->version, "1.0.1");
  EXPECT_NE(skill->files["SKILL.md"].find("Revoke the old key"), std::string::npos);
  EXPECT_NE(skill->files["SKILL.md"].find("version: 1.0.1"), std::string::npos);
  auto versions = service_->Versions("default", t1.skill_ids[0]);
  ASSERT_TRUE(versions.ok());
  ASSERT_EQ(versions->size(), 1u);
  EXPECT_EQ((*versions)[0].version, "1.0.0");
  // Another owner gets their own skill.
  SkillTaskRecord t3 = Wait(*service_->Add(HowTo("u2", "Done.")));
  ASSERT_EQ(t3.skill_ids.size(), 1u);
  EXPECT_NE(t3.skill_ids[0], t1.skill_ids[0]);
}

TEST_F(SkillServiceTest, UnfinishedTasksResumeAfterRestart) {
  // Accepted but never run (no Start): pending in the store.
  auto id = service_->Add(HowTo("u1", "Delete the old key."));
  ASSERT_TRUE(id.ok());
  Open();
  ASSERT_TRUE(service_->Start().ok());
  SkillTaskRecord t = Wait(*id);
  EXPECT_EQ(t.status, JobStatus::kSucceeded);
  auto hits = service_->Search({"default", "rotate keys", "u1", "", 10});
  ASSERT_TRUE(hits.ok());
  ASSERT_EQ(hits->size(), 1u);
  EXPECT_EQ((*hits)[0].skill.name, "rotate-the-api-keys");
}

TEST_F(SkillServiceTest, UpdateChecksOwnerAndReindexes) {
  ASSERT_TRUE(service_->Start().ok());
  SkillTaskRecord t = Wait(*service_->Add(HowTo("u1", "Delete the old key.")));
  const std::string id = t.skill_ids.at(0);
  SkillUpdateRequest up;
  up.workspace = "default";
  up.id = id;
  up.user_id = "intruder";
  up.description = "x";
  EXPECT_EQ(service_->Update(up).status().code(), StatusCode::kNotFound);
  up.user_id = "u1";
  up.description = "Rotate credentials of the billing gateway";
  up.files["scripts/rotate.sh"] = "echo rotate";
  auto updated = service_->Update(up);
  ASSERT_TRUE(updated.ok()) << updated.status().ToString();
  EXPECT_EQ(updated->files.size(), 2u);
  auto hits = service_->Search({"default", "billing gateway", "u1", "", 10});
  ASSERT_TRUE(hits.ok());
  ASSERT_EQ(hits->size(), 1u);
  EXPECT_EQ(service_->Delete("default", id, "intruder").code(), StatusCode::kNotFound);
  EXPECT_TRUE(service_->Delete("default", id, "u1").ok());
  EXPECT_TRUE(service_->Search({"default", "billing gateway", "u1", "", 10})->empty());
  EXPECT_EQ(service_->Get("default", id, "u1").status().code(), StatusCode::kNotFound);
}

// A call that names a user_id acts only on that user's skills: another user gets the answer an
// unknown id gets, and nothing changes. A call that names none acts for the workspace.
TEST_F(SkillServiceTest, ANamedUserActsOnlyOnItsOwnSkills) {
  ASSERT_TRUE(service_->Start().ok());
  SkillTaskRecord t = Wait(*service_->Add(HowTo("u1", "Delete the old key.")));
  const std::string id = t.skill_ids.at(0);
  const std::string unknown = "s-00000000-0000-0000-0000-000000000000";
  for (const std::string& other : {std::string("u2"), std::string()}) {
    auto got = service_->Get("default", id, other);
    ASSERT_EQ(got.status().code(), StatusCode::kNotFound) << other;
    std::string unknown_message = service_->Get("default", unknown, other).status().message();
    unknown_message.replace(unknown_message.find(unknown), unknown.size(), id);
    EXPECT_EQ(got.status().message(), unknown_message);
    EXPECT_EQ(service_->Delete("default", id, other).code(), StatusCode::kNotFound);
    SkillUpdateRequest up;
    up.workspace = "default";
    up.id = id;
    up.user_id = other;
    up.description = "taken over";
    EXPECT_EQ(service_->Update(up).status().code(), StatusCode::kNotFound);
  }
  auto mine = service_->Get("default", id, "u1");
  ASSERT_TRUE(mine.ok()) << mine.status().ToString();
  EXPECT_NE(mine->description, "taken over");
  EXPECT_EQ(mine->version, "1.0.0");
  // The workspace's view: the skill, with its owner; then deleted without naming the owner.
  auto any = service_->Get("default", id, std::nullopt);
  ASSERT_TRUE(any.ok()) << any.status().ToString();
  EXPECT_EQ(any->owner, "u1");
  EXPECT_EQ(service_->Get("default", unknown, std::nullopt).status().code(), StatusCode::kNotFound);
  EXPECT_TRUE(service_->Delete("default", id, std::nullopt).ok());
  EXPECT_EQ(service_->Get("default", id, "u1").status().code(), StatusCode::kNotFound);
  EXPECT_EQ(service_->Delete("default", id, std::nullopt).code(), StatusCode::kNotFound);
}

TEST(NextSkillVersionTest, Bumps) {
  EXPECT_EQ(NextSkillVersion("1.0.0"), "1.0.1");
  EXPECT_EQ(NextSkillVersion("3"), "4");
  EXPECT_EQ(NextSkillVersion("v1.9-beta"), "v1.10-beta");
  EXPECT_EQ(NextSkillVersion("beta"), "beta.1");
  EXPECT_EQ(NextSkillVersion(""), "1.0.0");
}

}  // namespace
}  // namespace engram
