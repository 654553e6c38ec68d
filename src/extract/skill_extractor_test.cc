#include "extract/skill_extractor.h"

#include <gtest/gtest.h>

namespace engram {
namespace {

std::vector<ConversationMessage> Conv(std::vector<std::pair<std::string, std::string>> turns) {
  std::vector<ConversationMessage> out;
  for (auto& [role, content] : turns) out.push_back({role, content, 0});
  return out;
}

TEST(BuiltinSkillExtractorTest, NumberedStepsBecomeASkill) {
  BuiltinSkillExtractor x;
  auto skills = x.Extract(Conv({{"user", "Hi! How do I deploy the web app to staging?"},
                                {"assistant",
                                 "Sure. Follow these steps:\n1. Run the tests with `make test`.\n"
                                 "2. Build the image:\n```\ndocker build -t app .\n```\n"
                                 "3) Push it and run `kubectl rollout restart`.\n"},
                                {"user", "Thanks!"}}));
  ASSERT_TRUE(skills.ok());
  ASSERT_EQ(skills->size(), 1u);
  const SkillDraft& d = (*skills)[0];
  EXPECT_EQ(d.goal, "deploy the web app to staging");
  EXPECT_EQ(d.name, "deploy-the-web-app-to-staging");
  ASSERT_EQ(d.steps.size(), 3u);
  EXPECT_EQ(d.steps[0], "Run the tests with `make test`.");
  EXPECT_NE(d.steps[1].find("docker build -t app ."), std::string::npos);
  EXPECT_EQ(d.tags, (std::vector<std::string>{"deploy", "web", "app", "staging"}));
  const std::string md = RenderSkillDraft(d);
  auto parsed = ParseSkillMd(md);
  ASSERT_TRUE(parsed.ok()) << md;
  EXPECT_EQ(parsed->front.name, d.name);
  EXPECT_NE(parsed->body.find("## Steps\n\n1. Run the tests"), std::string::npos) << md;
}

TEST(BuiltinSkillExtractorTest, ProseAndBulletsAndSeveralGoals) {
  BuiltinSkillExtractor x;
  auto skills = x.Extract(Conv(
      {{"user", "Can you help me reset my router password?"},
       {"assistant",
        "First, unplug the router. Then hold the reset button for 10 seconds. "
        "Finally, log in with admin/admin and pick a new password."},
       {"user", "I want to back up my photos."},
       {"assistant", "- Plug in the external drive\n- Open the Photos app\n- Export all photos"}}));
  ASSERT_TRUE(skills.ok());
  ASSERT_EQ(skills->size(), 2u);
  EXPECT_EQ((*skills)[0].name, "reset-my-router-password");
  EXPECT_EQ((*skills)[0].steps,
            (std::vector<std::string>{"Unplug the router.", "Hold the reset button for 10 seconds.",
                                      "Log in with admin/admin and pick a new password."}));
  EXPECT_EQ((*skills)[1].name, "back-up-my-photos");
  EXPECT_EQ((*skills)[1].steps.size(), 3u);
}

TEST(BuiltinSkillExtractorTest, NoStepsNoSkill) {
  BuiltinSkillExtractor x;
  auto skills = x.Extract(Conv({{"user", "I like tea."}, {"assistant", "Nice! Tea is great."}}));
  ASSERT_TRUE(skills.ok());
  EXPECT_TRUE(skills->empty());
}

// The vendor reference's example: a goal stated as an instruction, answered by one instruction.
TEST(BuiltinSkillExtractorTest, AnInstructionAnsweredByAnInstructionIsASkill) {
  BuiltinSkillExtractor x;
  auto skills = x.Extract(
      Conv({{"user", "Unify login failure message across platforms"},
            {"assistant",
             "Standardize the login failure message to \"Login failed, please try again\" across "
             "Android, iOS, and Web"}}));
  ASSERT_TRUE(skills.ok());
  ASSERT_EQ(skills->size(), 1u);
  EXPECT_EQ((*skills)[0].name, "unify-login-failure-message-across-platforms");
  ASSERT_EQ((*skills)[0].steps.size(), 1u);
  EXPECT_EQ((*skills)[0].steps[0].rfind("Standardize the login failure message", 0), 0u);
  // Not an instruction on either side: no skill.
  for (auto [user, assistant] : std::vector<std::pair<std::string, std::string>>{
           {"Unify login failure message across platforms", "Sounds like a good idea."},
           {"Paris is lovely in spring.", "Visit the Louvre early in the morning."},
           {"Can you recommend a coffee?", "Here are some Americano recommendations..."}}) {
    auto none = x.Extract(Conv({{"user", user}, {"assistant", assistant}}));
    ASSERT_TRUE(none.ok());
    EXPECT_TRUE(none->empty()) << user << " / " << assistant;
  }
}

TEST(SkillSlugTest, Slugs) {
  EXPECT_EQ(SkillSlug("Deploy the Web App!"), "deploy-the-web-app");
  EXPECT_EQ(SkillSlug("  --a__b  "), "a-b");
  EXPECT_EQ(SkillSlug("one two three", 8), "one-two");
}

}  // namespace
}  // namespace engram
