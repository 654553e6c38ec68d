#include "common/json_reader.h"

#include <gtest/gtest.h>

#include <chrono>
#include <nlohmann/json.hpp>
#include <string>

namespace engram {
namespace {

using json = nlohmann::json;

JsonReadLimits Limits() { return JsonReadLimits{.what = "request body", .refuse_nul = true}; }

std::string ErrorOf(std::string_view text, const JsonReadLimits& limits = Limits()) {
  auto r = ReadJson(text, limits);
  EXPECT_FALSE(r.ok()) << text.substr(0, 80);
  if (r.ok()) return "";
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidParameter) << r.status().message();
  return r.status().message();
}

std::string Nested(int depth, bool objects) {
  std::string s;
  for (int i = 0; i < depth; ++i) s += objects ? "{\"a\":" : "[";
  s += "1";
  for (int i = 0; i < depth; ++i) s += objects ? "}" : "]";
  return s;
}

TEST(JsonReaderTest, ReadsValues) {
  auto r = ReadJson(R"( {"a":[1,-2,3.5,"x",true,null,{}],"b":18446744073709551615} )", Limits());
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ((*r)["a"][1], -2);
  EXPECT_EQ((*r)["a"][3], "x");
  EXPECT_EQ((*r)["b"].get<uint64_t>(), UINT64_MAX);
  EXPECT_TRUE(ReadJson("42", Limits()).ok());
  EXPECT_TRUE(ReadJson("\"s\"", Limits()).ok());
}

TEST(JsonReaderTest, DepthExactlyAtAndOverTheLimit) {
  JsonReadLimits limits = Limits();
  limits.max_depth = 3;
  EXPECT_TRUE(ReadJson(Nested(3, false), limits).ok());
  EXPECT_TRUE(ReadJson(Nested(3, true), limits).ok());
  EXPECT_TRUE(ReadJson("[[],[[]],{}]", limits).ok());
  EXPECT_EQ(ErrorOf(Nested(4, false), limits),
            "request body nests deeper than 3 levels at byte offset 3");
  EXPECT_EQ(ErrorOf(Nested(4, true), limits),
            "request body nests deeper than 3 levels at byte offset 15");
  limits.max_depth = 0;
  EXPECT_TRUE(ReadJson("1", limits).ok());
  EXPECT_NE(ErrorOf("[]", limits).find("nests deeper than 0 levels"), std::string::npos);
  // Brackets inside strings do not count.
  EXPECT_TRUE(ReadJson("\"" + std::string(500, '[') + "\"", limits).ok());
}

TEST(JsonReaderTest, HundredThousandLevelsAreRefusedQuickly) {
  const auto start = std::chrono::steady_clock::now();
  for (bool objects : {true, false}) {
    const std::string deep = Nested(100000, objects);
    EXPECT_NE(ErrorOf(deep).find("nests deeper than 64 levels"), std::string::npos);
    // Unclosed, too: refused at the 65th bracket, long before the end.
    std::string open;
    for (int i = 0; i < 100000; ++i) open += objects ? "{\"a\":" : "[";
    EXPECT_EQ(ErrorOf(open), objects
                                 ? "request body nests deeper than 64 levels at byte offset 320"
                                 : "request body nests deeper than 64 levels at byte offset 64");
  }
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::milliseconds(500));
}

TEST(JsonReaderTest, RefusesDuplicateKeysAlsoNested) {
  EXPECT_EQ(ErrorOf(R"({"a":1,"a":2})"),
            "request body is not valid JSON: duplicate key \"a\" in request body at byte offset 9");
  EXPECT_EQ(ErrorOf(R"({"m":{"x":[{"b":1,"b":2}]}})"),
            "request body is not valid JSON: duplicate key \"b\" in m.x[0] at byte offset 20");
  // The same key in different objects is fine.
  EXPECT_TRUE(ReadJson(R"({"a":{"a":1},"b":[{"a":1},{"a":2}]})", Limits()).ok());
  // A long key is not quoted back.
  const std::string long_key(200, 'k');
  const std::string msg = ErrorOf("{\"" + long_key + "\":1,\"" + long_key + "\":2}");
  EXPECT_EQ(msg.find("kkkk"), std::string::npos) << msg;
  EXPECT_NE(msg.find("duplicate key in request body at byte offset"), std::string::npos) << msg;
  // Allowed when asked: the last one wins, as with nlohmann's parser.
  JsonReadLimits lenient = Limits();
  lenient.refuse_duplicate_keys = false;
  auto r = ReadJson(R"({"a":1,"a":{"z":2}})", lenient);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(*r, json::parse(R"({"a":{"z":2}})"));
}

TEST(JsonReaderTest, SyntaxErrorsNameTheProblemAndTheByteOffset) {
  EXPECT_EQ(ErrorOf("{\"a\":\"x\xff\"}"),
            "request body is not valid JSON: invalid string: ill-formed UTF-8 byte 0xFF at byte "
            "offset 7");
  EXPECT_EQ(ErrorOf(R"({"a":"\ud800"})"),
            "request body is not valid JSON: invalid string: surrogate U+D800..U+DBFF must be "
            "followed by U+DC00..U+DFFF at byte offset 12");
  EXPECT_EQ(ErrorOf(R"({"a":"\udc00"})"),
            "request body is not valid JSON: invalid string: surrogate U+DC00..U+DFFF must follow "
            "U+D800..U+DBFF at byte offset 11");
  EXPECT_EQ(ErrorOf(R"({"a":1e999})"),
            "request body is not valid JSON: number out of range at byte offset 5");
  EXPECT_EQ(ErrorOf(R"([0,-1e999])"),
            "request body is not valid JSON: number out of range at byte offset 3");
  EXPECT_EQ(ErrorOf(R"({"a":)"),
            "request body is not valid JSON: unexpected end of input at byte offset 5; expected "
            "'[', '{', or a literal");
  EXPECT_EQ(ErrorOf(R"({"a" 1})"),
            "request body is not valid JSON: unexpected number literal at byte offset 5; expected "
            "':'");
  EXPECT_EQ(
      ErrorOf(R"({"a":"abc)"),
      "request body is not valid JSON: invalid string: missing closing quote at byte offset 9");
  EXPECT_EQ(ErrorOf(""),
            "request body is not valid JSON: unexpected end of input at byte offset 0; expected "
            "'[', '{', or a literal");
  EXPECT_NE(ErrorOf("{} x").find("at byte offset 3"), std::string::npos);
  EXPECT_NE(ErrorOf("[1,]").find("at byte offset 3"), std::string::npos);
  EXPECT_NE(ErrorOf("{\"a\":\"x\ty\"}").find("control character U+0009"), std::string::npos);
  EXPECT_NE(ErrorOf("nul").find("invalid literal"), std::string::npos);
  // Tiny numbers underflow to zero, which is representable: accepted.
  EXPECT_TRUE(ReadJson("1e-999", Limits()).ok());
}

TEST(JsonReaderTest, MessagesDoNotEchoInput) {
  const std::string secret = "my-secret-token-value";
  for (const std::string& text :
       {"{\"a\":\"" + secret + "\xff\"}", "{\"a\":\"" + secret, "{\"a\":" + secret + "}",
        "{\"a\":\"" + secret + "\\ud800\"}", "[1" + secret + "e999]"}) {
    const std::string msg = ErrorOf(text);
    EXPECT_EQ(msg.find("secret"), std::string::npos) << msg;
    EXPECT_NE(msg.find("at byte offset"), std::string::npos) << msg;
  }
}

TEST(JsonReaderTest, RefusesNulCharactersNamingWhere) {
  EXPECT_EQ(ErrorOf(R"({"messages":[{"content":"a\u0000b"}]})"),
            "messages[0].content must not contain NUL characters");
  EXPECT_EQ(ErrorOf(R"({"m":[1,"\u0000"]})"), "m[1] must not contain NUL characters");
  EXPECT_EQ(ErrorOf(R"({"metadata":{"k\u0000":1}})"),
            "metadata key must not contain NUL characters");
  EXPECT_EQ(ErrorOf(R"({"\u0000":1})"), "request body key must not contain NUL characters");
  EXPECT_EQ(ErrorOf(R"(["\u0000"])"), "request body[0] must not contain NUL characters");
  // A raw NUL byte is a control character the lexer refuses.
  EXPECT_NE(ErrorOf(std::string("{\"a\":\"\0\"}", 9)).find("U+0000 (NUL)"), std::string::npos);
  // An escaped backslash followed by the letters u0000 is text, not a NUL.
  EXPECT_TRUE(ReadJson(R"({"a":"\\u0000"})", Limits()).ok());
  JsonReadLimits lenient = Limits();
  lenient.refuse_nul = false;
  auto r = ReadJson(R"({"a":"x\u0000y"})", lenient);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ((*r)["a"].get<std::string>(), std::string("x\0y", 3));
}

TEST(JsonReaderTest, SizeLimit) {
  JsonReadLimits limits = Limits();
  limits.max_bytes = 8;
  EXPECT_TRUE(ReadJson("[1,2,33]", limits).ok());
  auto r = ReadJson("[1,2,333]", limits);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kPayloadTooLarge);
  EXPECT_EQ(r.status().message(), "request body is too large: 9 bytes, at most 8 allowed");
}

TEST(JsonReaderTest, DiscardedOnFailure) {
  EXPECT_TRUE(ReadJsonOrDiscarded("{", Limits()).is_discarded());
  EXPECT_EQ(ReadJsonOrDiscarded("{\"a\":1}", Limits()), json::parse("{\"a\":1}"));
}

TEST(JsonReaderTest, DumpNeverThrows) {
  json j = {{"a", std::string("x\xffy")}};
  EXPECT_EQ(DumpJson(j), "{\"a\":\"x\xEF\xBF\xBDy\"}");
  EXPECT_EQ(DumpJson(json::parse("[1,2.5,\"\\u00e9\"]")), "[1,2.5,\"\xC3\xA9\"]");
}

}  // namespace
}  // namespace engram
