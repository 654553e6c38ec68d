#include "extract/skill_md.h"

#include <gtest/gtest.h>

namespace engram {
namespace {

TEST(SkillMdTest, ParsesRequiredAndOptionalFields) {
  auto p = ParseSkillMd(
      "---\nname: deploy-app\ndescription: Deploy the app.\nversion: 1.2\ntags: [deploy, web]\n"
      "triggers: ship it, deploy now\nlicense: MIT\nmetadata:\n  team: web\n  level: 2\n---\n"
      "# Deploy\n1. Build\n");
  ASSERT_TRUE(p.ok()) << p.status().ToString();
  EXPECT_EQ(p->front.name, "deploy-app");
  EXPECT_EQ(p->front.description, "Deploy the app.");
  EXPECT_EQ(p->front.version, "1.2");
  EXPECT_EQ(p->front.tags, (std::vector<std::string>{"deploy", "web"}));
  EXPECT_EQ(p->front.triggers, (std::vector<std::string>{"ship it", "deploy now"}));
  EXPECT_EQ(p->front.license, "MIT");
  EXPECT_EQ(p->front.metadata_json, R"({"level":"2","team":"web"})");
  EXPECT_EQ(p->body, "# Deploy\n1. Build\n");
}

TEST(SkillMdTest, NamesTheMissingField) {
  auto p = ParseSkillMd("---\ndescription: x\n---\nbody");
  ASSERT_FALSE(p.ok());
  EXPECT_EQ(p.status().message(), "name is required");
  p = ParseSkillMd("---\nname: x\ndescription: \"  \"\n---\nbody");
  ASSERT_FALSE(p.ok());
  EXPECT_EQ(p.status().message(), "description must not be empty");
  p = ParseSkillMd("---\nname: [a, b]\ndescription: d\n---\n");
  ASSERT_FALSE(p.ok());
  EXPECT_EQ(p.status().message(), "name must be a string");
  p = ParseSkillMd("---\nname: a\ndescription: d\ntags: {a: 1}\n---\n");
  ASSERT_FALSE(p.ok());
  EXPECT_EQ(p.status().message(), "tags must be a list of strings");
}

TEST(SkillMdTest, RejectsMissingFrontMatterAndBadYaml) {
  EXPECT_FALSE(ParseSkillMd("# Just markdown\n").ok());
  EXPECT_FALSE(ParseSkillMd("---\nname: a\n").ok());  // never closed
  auto p = ParseSkillMd("---\nname: [unclosed\ndescription: d\n---\n");
  ASSERT_FALSE(p.ok());
  EXPECT_NE(p.status().message().find("not valid YAML"), std::string::npos);
  EXPECT_FALSE(ParseSkillMd("---\n- a\n- b\n---\n").ok());
}

TEST(SkillMdTest, RenderParsesBack) {
  SkillFrontMatter f;
  f.name = "x-y";
  f.description = "Does: things, with \"quotes\"";
  f.version = "2";
  f.tags = {"a", "b c"};
  f.triggers = {"do x"};
  std::string md = RenderSkillMd(f, "\n# Body\n");
  auto p = ParseSkillMd(md);
  ASSERT_TRUE(p.ok()) << md;
  EXPECT_EQ(p->front.name, f.name);
  EXPECT_EQ(p->front.description, f.description);
  EXPECT_EQ(p->front.version, "2");
  EXPECT_EQ(p->front.tags, f.tags);
  EXPECT_EQ(p->front.triggers, f.triggers);
  EXPECT_EQ(p->body, "\n# Body\n");
}

TEST(SkillMdTest, RewriteKeepsOtherKeysAndBody) {
  SkillFrontMatter f;
  f.name = "new-name";
  f.description = "new";
  auto md = RewriteFrontMatter("---\nname: old\ndescription: old\nlicense: MIT\n---\nBODY\n", f);
  ASSERT_TRUE(md.ok());
  auto p = ParseSkillMd(*md);
  ASSERT_TRUE(p.ok()) << *md;
  EXPECT_EQ(p->front.name, "new-name");
  EXPECT_EQ(p->front.license, "MIT");
  EXPECT_EQ(p->body, "BODY\n");
}

TEST(SkillMdTest, Utf8Validation) {
  EXPECT_TRUE(IsValidUtf8("héllo 日本 🙂"));
  EXPECT_FALSE(IsValidUtf8("\xff\xfe"));
  EXPECT_FALSE(IsValidUtf8("\xc0\xaf"));          // overlong '/'
  EXPECT_FALSE(IsValidUtf8("\xed\xa0\x80"));      // surrogate
  EXPECT_FALSE(IsValidUtf8("abc\xe6\x97"));       // truncated
}

}  // namespace
}  // namespace engram
