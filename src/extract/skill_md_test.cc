#include "extract/skill_md.h"

#include <gtest/gtest.h>

#include <chrono>
#include <string>

namespace engram {
namespace {

// The "billion laughs" shape in `metadata`: l0 is ten scalars, each further level ten aliases of
// the one before, so level n expands to 10^(n+1) scalars from a few hundred bytes.
std::string AliasBomb(int levels, const std::string& key = "metadata") {
  std::string s = "---\nname: a\ndescription: d\n" + key + ":\n  l0: &l0 [lol";
  for (int i = 1; i < 10; ++i) s += ", lol";
  s += "]\n";
  for (int l = 1; l <= levels; ++l) {
    s += "  l" + std::to_string(l) + ": &l" + std::to_string(l) + " [*l" + std::to_string(l - 1);
    for (int i = 1; i < 10; ++i) s += ", *l" + std::to_string(l - 1);
    s += "]\n";
  }
  return s + "---\nbody\n";
}

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

TEST(SkillMdTest, AliasBombsAreRefusedFast) {
  const auto start = std::chrono::steady_clock::now();
  for (int levels : {6, 7, 9}) {
    const std::string md = AliasBomb(levels);
    EXPECT_LT(md.size(), 700u);  // a few hundred bytes
    auto p = ParseSkillMd(md);
    ASSERT_FALSE(p.ok()) << levels;
    EXPECT_EQ(p.status().code(), StatusCode::kInvalidParameter);
    EXPECT_EQ(p.status().message(),
              "SKILL.md front matter expands beyond 10000 nodes (YAML aliases?)");
  }
  // A bomb under a key Engram does not read is refused too: SKILL.md is stored and served back.
  EXPECT_FALSE(ParseSkillMd(AliasBomb(7, "x-extra")).ok());
  // Without the budget the l6 bomb took ~20 s and 2.3 GB; with it, the three take milliseconds.
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(2));
}

TEST(SkillMdTest, FewAliasesStillWork) {
  auto p = ParseSkillMd(
      "---\nname: a\ndescription: d\nmetadata:\n  base: &base {team: web, tier: 2}\n"
      "  prod: *base\n  owners: &o [ann, bob]\n  reviewers: *o\n---\n");
  ASSERT_TRUE(p.ok()) << p.status().ToString();
  EXPECT_EQ(p->front.metadata_json,
            R"({"base":{"team":"web","tier":"2"},"owners":["ann","bob"],)"
            R"("prod":{"team":"web","tier":"2"},"reviewers":["ann","bob"]})");
}

TEST(SkillMdTest, DeepNestingIsRefused) {
  const auto start = std::chrono::steady_clock::now();
  const std::string head = "---\nname: a\ndescription: d\nmetadata:\n  k: ";
  // Beyond the converter's 32 levels but within yaml-cpp's own guard: refused by the converter.
  auto p = ParseSkillMd(head + std::string(40, '[') + std::string(40, ']') + "\n---\n");
  ASSERT_FALSE(p.ok());
  EXPECT_EQ(p.status().message(), "SKILL.md front matter nests deeper than 32 levels");
  std::string maps = head;
  for (int i = 0; i < 40; ++i) maps += "{a: ";
  maps += "x" + std::string(40, '}') + "\n---\n";
  p = ParseSkillMd(maps);
  ASSERT_FALSE(p.ok());
  EXPECT_EQ(p.status().message(), "SKILL.md front matter nests deeper than 32 levels");
  // Far deeper (the front matter limit raised so the parser sees all of it): yaml-cpp's depth
  // guard stops its recursive parser long before the stack would run out.
  SkillMdLimits big;
  big.max_front_matter_bytes = 1 << 20;
  for (const std::string& deep : {head + std::string(100000, '[') + std::string(100000, ']'),
                                  head + std::string(100000, '[')}) {
    p = ParseSkillMd(deep + "\n---\n", big);
    ASSERT_FALSE(p.ok());
    EXPECT_EQ(p.status().code(), StatusCode::kInvalidParameter);
  }
  maps = head;
  for (int i = 0; i < 50000; ++i) maps += "{a: ";
  p = ParseSkillMd(maps + "x\n---\n", big);
  ASSERT_FALSE(p.ok());
  EXPECT_EQ(p.status().code(), StatusCode::kInvalidParameter);
  // With the default limit the same text is refused before yaml-cpp reads it.
  p = ParseSkillMd(maps + "x\n---\n");
  ASSERT_FALSE(p.ok());
  EXPECT_NE(p.status().message().find("larger than"), std::string::npos);
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(5));
}

TEST(SkillMdTest, KeysThatAreNotStringsAreRefused) {
  auto p = ParseSkillMd("---\nname: a\ndescription: d\nmetadata:\n  ? [x, y]\n  : v\n---\n");
  ASSERT_FALSE(p.ok());
  EXPECT_EQ(p.status().message(), "SKILL.md front matter has a key that is not a string");
  p = ParseSkillMd("---\nname: a\ndescription: d\n{k: 1}: v\n---\n");
  ASSERT_FALSE(p.ok());
  EXPECT_EQ(p.status().code(), StatusCode::kInvalidParameter);
}

TEST(SkillMdTest, Utf8Validation) {
  EXPECT_TRUE(IsValidUtf8("héllo 日本 🙂"));
  EXPECT_FALSE(IsValidUtf8("\xff\xfe"));
  EXPECT_FALSE(IsValidUtf8("\xc0\xaf"));      // overlong '/'
  EXPECT_FALSE(IsValidUtf8("\xed\xa0\x80"));  // surrogate
  EXPECT_FALSE(IsValidUtf8("abc\xe6\x97"));   // truncated
}

}  // namespace
}  // namespace engram
