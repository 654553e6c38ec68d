#include "api/json_input.h"

#include <gtest/gtest.h>

namespace engram {
namespace {

TEST(JsonInputTest, ParsesObjectsOnly) {
  EXPECT_TRUE(ParseJsonObject("{\"a\":1}").ok());
  EXPECT_EQ(ParseJsonObject("").status().message(),
            "request body is empty; expected a JSON object");
  EXPECT_EQ(ParseJsonObject("[1]").status().message(),
            "request body must be a JSON object, got an array");
  EXPECT_EQ(ParseJsonObject("{\"a\":").status().message(),
            "request body is not valid JSON: unexpected end of input at byte offset 5; expected "
            "'[', '{', or a literal");
  EXPECT_EQ(ParseJsonObject("{\"a\":1,\"a\":2}").status().message(),
            "request body is not valid JSON: duplicate key \"a\" in request body at byte offset 9");
}

TEST(JsonInputTest, RejectsDeepNesting) {
  std::string deep(100000, '[');
  auto r = ParseJsonObject(deep);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("nests deeper"), std::string::npos);
  // Brackets inside strings do not count.
  EXPECT_TRUE(ParseJsonObject("{\"a\":\"" + std::string(500, '[') + "\"}").ok());
}

TEST(JsonInputTest, RefusesNulCharactersNamingWhere) {
  EXPECT_EQ(ParseJsonObject(R"({"messages":[{"content":"a\u0000b"}]})").status().message(),
            "messages[0].content must not contain NUL characters");
  EXPECT_EQ(ParseJsonObject(R"({"metadata":{"k\u0000":1}})").status().message(),
            "metadata key must not contain NUL characters");
  EXPECT_EQ(ParseJsonObject(R"({"\u0000":1})").status().message(),
            "request body key must not contain NUL characters");
  // An escaped backslash followed by the letters u0000 is text, not a NUL.
  EXPECT_TRUE(ParseJsonObject(R"({"a":"\\u0000"})").ok());
  EXPECT_TRUE(ParseJsonObject(R"({"a":"\u0001"})").ok());
}

TEST(JsonInputTest, StringRules) {
  auto j = nlohmann::json::parse(R"({"s":"abc","e":"  ","n":5})");
  EXPECT_EQ(**GetString(j, "s", "s", {}), "abc");
  EXPECT_EQ(GetString(j, "e", "e", {}).status().message(), "e must not be empty");
  EXPECT_EQ(GetString(j, "n", "n", {}).status().message(), "n must be a string, got a number");
  EXPECT_EQ(GetString(j, "x", "x", {}).status().message(), "x is required");
  EXPECT_FALSE(GetString(j, "x", "x", {.required = false})->has_value());
  EXPECT_EQ(GetString(j, "s", "s", {.max_bytes = 2}).status().message(),
            "s is too long: 3 bytes, at most 2 allowed");
}

TEST(JsonInputTest, IntRules) {
  auto j = nlohmann::json::parse(R"({"i":5,"f":5.0,"g":5.5,"s":"5","big":1e300})");
  EXPECT_EQ(**GetInt(j, "i", "i", 1, 10, true), 5);
  EXPECT_EQ(**GetInt(j, "f", "f", 1, 10, true), 5);
  EXPECT_FALSE(GetInt(j, "g", "g", 1, 10, true).ok());
  EXPECT_FALSE(GetInt(j, "s", "s", 1, 10, true).ok());
  EXPECT_FALSE(GetInt(j, "big", "big", 1, 10, true).ok());
  EXPECT_EQ(GetInt(j, "i", "i", 6, 10, true).status().message(),
            "i must be between 6 and 10, got 5");
}

TEST(JsonInputTest, Utf8Validation) {
  EXPECT_TRUE(IsValidUtf8("héllo 世界 🎉"));
  EXPECT_FALSE(IsValidUtf8("\xC3"));
  EXPECT_FALSE(IsValidUtf8("\xC0\xAF"));      // overlong
  EXPECT_FALSE(IsValidUtf8("\xED\xA0\x80"));  // surrogate
}

}  // namespace
}  // namespace engram
