#include "api/skills_api.h"

#include <gtest/gtest.h>

#include "common/codec.h"

namespace engram {
namespace {

const SkillApiLimits kLimits;

std::string Message(const Status& s) { return s.message(); }

TEST(SkillsApiParseTest, AddAcceptsTheMessageForms) {
  auto r = ParseSkillAdd(R"({"messages": "How do I x?", "user_id": "u"})", "ws", kLimits);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->messages.size(), 1u);
  EXPECT_EQ(r->messages[0].role, "user");
  r = ParseSkillAdd(
      R"({"messages": [{"role": "user", "content": "a"}, {"role": "assistant", "content": "b"}],
                        "user_id": "u", "agent_id": "g"})",
      "ws", kLimits);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->agent_id, "g");
  EXPECT_EQ(
      Message(ParseSkillAdd(R"({"messages": [{"role": "bot", "content": "a"}], "user_id": "u"})",
                            "ws", kLimits)
                  .status()),
      "messages[0].role must be one of user, assistant, system");
  EXPECT_EQ(Message(ParseSkillAdd(R"({"messages": "x"})", "ws", kLimits).status()),
            "user_id is required");
}

TEST(SkillsApiParseTest, ImportDecodesAndBoundsTheArchive) {
  auto r = ParseSkillImport(
      R"({"zip_base64": ")" + Base64Encode("PK\x05\x06") + R"(", "user_id": "u"})", "ws", kLimits);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->zip, "PK\x05\x06");
  SkillApiLimits small;
  small.max_zip_bytes = 2;
  auto too_big = ParseSkillImport(
      R"({"zip_base64": ")" + Base64Encode("12345") + R"(", "user_id": "u"})", "ws", small);
  ASSERT_FALSE(too_big.ok());
  EXPECT_NE(too_big.status().message().find("zip_base64"), std::string::npos);
  EXPECT_EQ(
      Message(ParseSkillImport(R"({"zip_base64": 5, "user_id": "u"})", "ws", kLimits).status()),
      "zip_base64 must be a string, got a number");
}

TEST(SkillsApiParseTest, SearchDefaultsAndBounds) {
  auto r = ParseSkillSearch(R"({"query": "q", "user_id": "u"})", "ws", kLimits);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->size, 10u);
  EXPECT_FALSE(
      ParseSkillSearch(R"({"query": "q", "user_id": "u", "size": 101})", "ws", kLimits).ok());
  EXPECT_FALSE(ParseSkillSearch(R"({"query": " ", "user_id": "u"})", "ws", kLimits).ok());
}

TEST(SkillsApiParseTest, UpdateIsPartialAndChecksFiles) {
  auto r = ParseSkillUpdate(
      R"({"user_id": "u", "tags": ["a"], "files": {"./scripts//x.sh": "echo", "old.md": null}})",
      "ws", "s-1", kLimits);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_FALSE(r->name);
  EXPECT_EQ(*r->tags, std::vector<std::string>{"a"});
  EXPECT_EQ(r->files.at("scripts/x.sh"), "echo");
  EXPECT_FALSE(r->files.at("old.md"));
  EXPECT_EQ(Message(ParseSkillUpdate(R"({"user_id": "u"})", "ws", "s-1", kLimits).status()),
            "at least one of name, version, description, tags, files, agent_id is required");
  EXPECT_NE(
      Message(ParseSkillUpdate(R"({"user_id": "u", "files": {"../x": "y"}})", "ws", "s-1", kLimits)
                  .status())
          .find("path traversal"),
      std::string::npos);
  EXPECT_EQ(
      Message(ParseSkillUpdate(R"({"user_id": "u", "tags": [1]})", "ws", "s-1", kLimits).status()),
      "tags[0] must be a string, got a number");
  EXPECT_EQ(Message(ParseSkillUpdate(R"({"user_id": "u", "files": {"a": 3}})", "ws", "s-1", kLimits)
                        .status()),
            "files.a must be a string (or null to remove the file), got a number");
}

TEST(SkillsApiParseTest, OwnerOfGetAndDelete) {
  EXPECT_EQ(*ParseSkillOwner("user_id=u%201", kLimits), "u 1");
  EXPECT_EQ(*ParseSkillOwner("", kLimits), std::nullopt);  // the reference's calls: the workspace
  EXPECT_EQ(*ParseSkillOwner("agent_id=a", kLimits), std::nullopt);
  EXPECT_EQ(*ParseSkillOwner("user_id=", kLimits), "");  // named, empty: skills without an owner
  EXPECT_EQ(ParseSkillOwner("user_id=a&user_id=b", kLimits).status().code(),
            StatusCode::kInvalidParameter);
  auto r = ParseSkillOwner("user_id=" + std::string(kLimits.max_id_bytes + 1, 'u'), kLimits);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("user_id"), std::string::npos);
}

}  // namespace
}  // namespace engram
