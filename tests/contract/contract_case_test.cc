#include "contract_case.h"

#include <gtest/gtest.h>

namespace engram::contract {
namespace {

using nlohmann::json;

TEST(ParseCurlTest, ReadsTheReferencesForm) {
  std::string error;
  auto r = ParseCurl(
      "curl --location --request PUT 'http://****-hangzhou.example.com/v4/x/memories/m-1' \\\n"
      "--header 'Authorization: Bearer your-API-KEY' \\\n"
      "--header 'Content-Type: application/json' \\\n"
      "--data '{\n  \"text\": \"it's \\\"quoted\\\"\"\n}'",
      &error);
  ASSERT_FALSE(r) << "an unbalanced single quote inside the data must fail";
  r = ParseCurl(
      "curl --location --request PUT 'http://****-hangzhou.example.com/v4/x/memories/m-1?a=1' \\\n"
      "--header 'Authorization: Bearer your-API-KEY' \\\n"
      "--data '{\n  \"text\": \"say \"hi\"\"\n}'",
      &error);
  ASSERT_TRUE(r) << error;
  EXPECT_EQ(r->method, "PUT");
  EXPECT_EQ(r->target, "/v4/x/memories/m-1?a=1");
  ASSERT_EQ(r->headers.size(), 1u);
  EXPECT_EQ(r->headers[0],
            (std::pair<std::string, std::string>{"Authorization", "Bearer your-API-KEY"}));
  EXPECT_EQ(*r->data, "{\n  \"text\": \"say \"hi\"\"\n}") << "single quotes keep everything";
}

TEST(ParseCurlTest, MethodDefaultsAndErrors) {
  std::string error;
  EXPECT_EQ(ParseCurl("curl 'http://h/a'", &error)->method, "GET");
  EXPECT_EQ(ParseCurl("curl http://h/a -d x", &error)->method, "POST");
  EXPECT_EQ(ParseCurl("curl -X POST --location 'http://h'", &error)->target, "/");
  EXPECT_EQ(ParseCurl("curl -H \"X-A: \\\"b\\\"\" http://h/", &error)->headers[0].second, "\"b\"");
  EXPECT_FALSE(ParseCurl("wget http://h/", &error));
  EXPECT_FALSE(ParseCurl("curl --insecure http://h/", &error));
  EXPECT_NE(error.find("--insecure"), std::string::npos);
  EXPECT_FALSE(ParseCurl("curl -H http://h/", &error));
  EXPECT_FALSE(ParseCurl("curl 'http://h/", &error));
  EXPECT_FALSE(ParseCurl("curl /relative", &error));
}

constexpr const char* kCase = R"(# a comment
include setup/a.steps

example
curl --location 'http://h/v4/add' \
--data '{"x": 1}'
----
200 until .status "SUCCEEDED"
bind me-1 m-2
any .latency
subset .results
exact .
header x-request-id
{
  "id": "me-1",
  "results": ["m-2"],
  "latency": 0
}

step
# the suite's own request
curl http://h/health
----
503
)";

TEST(ParseCaseFileTest, ReadsStepsAndExpectations) {
  std::string error;
  auto f = ParseCaseFile(kCase, &error);
  ASSERT_TRUE(f) << error;
  EXPECT_EQ(f->includes, std::vector<std::string>{"setup/a.steps"});
  ASSERT_EQ(f->steps.size(), 2u);
  const Step& a = f->steps[0];
  EXPECT_EQ(a.kind, StepKind::kExample);
  EXPECT_EQ(a.line, 4);
  EXPECT_EQ(a.curl, "curl --location 'http://h/v4/add' \\\n--data '{\"x\": 1}'");
  EXPECT_EQ(a.expect.status, 200);
  EXPECT_EQ(*a.expect.until_path, ".status");
  EXPECT_EQ(a.expect.until_value, "SUCCEEDED");
  EXPECT_EQ(a.expect.binds, (std::vector<std::string>{"me-1", "m-2"}));
  EXPECT_EQ(a.expect.any, std::vector<std::string>{".latency"});
  EXPECT_EQ(a.expect.subset, std::vector<std::string>{".results"});
  EXPECT_EQ(a.expect.exact, std::vector<std::string>{"."});
  EXPECT_EQ(a.expect.headers, std::vector<std::string>{"x-request-id"});
  ASSERT_TRUE(a.expect.body);
  EXPECT_EQ((*a.expect.body)["id"], "me-1");
  EXPECT_EQ(f->steps[1].kind, StepKind::kStep);
  EXPECT_EQ(f->steps[1].expect.status, 503);
  EXPECT_FALSE(f->steps[1].expect.body);
}

TEST(ParseCaseFileTest, ErrorsNameTheLine) {
  std::string error;
  EXPECT_FALSE(ParseCaseFile("example\ncurl http://h/\n", &error));
  EXPECT_NE(error.find("----"), std::string::npos) << error;
  EXPECT_FALSE(ParseCaseFile("step\ncurl http://h/\n----\nok\n", &error));
  EXPECT_NE(error.find("line 4"), std::string::npos) << error;
  EXPECT_FALSE(ParseCaseFile("step\ncurl http://h/\n----\n200\n{not json\n", &error));
  EXPECT_FALSE(ParseCaseFile("frobnicate\n", &error));
  EXPECT_FALSE(ParseCaseFile("step\ncurl http://h/\n----\n200\n\ninclude x\n", &error))
      << "includes come first";
}

Expectation Expect(const char* body) {
  Expectation e;
  e.status = 200;
  e.body = json::parse(body);
  return e;
}

TEST(MatchBodyTest, ValuesTypesAndExtraKeys) {
  Bindings b;
  std::string why;
  Expectation e = Expect(R"({"a": 1, "b": {"c": "x"}, "n": 0.5})");
  EXPECT_TRUE(
      MatchBody(e, json::parse(R"({"a": 1.0, "b": {"c": "x", "d": 2}, "n": 0.5})"), b, &why))
      << why;
  EXPECT_FALSE(MatchBody(e, json::parse(R"({"a": 2, "b": {"c": "x"}, "n": 0.5})"), b, &why));
  EXPECT_NE(why.find(".a"), std::string::npos) << why;
  EXPECT_FALSE(MatchBody(e, json::parse(R"({"a": 1, "b": {}, "n": 0.5})"), b, &why));
  EXPECT_NE(why.find(".b.c"), std::string::npos) << why;
  e.any = {".n", ".b.c"};
  EXPECT_TRUE(MatchBody(e, json::parse(R"({"a": 1, "b": {"c": "y"}, "n": 7})"), b, &why)) << why;
  EXPECT_FALSE(MatchBody(e, json::parse(R"({"a": 1, "b": {"c": 3}, "n": 7})"), b, &why))
      << "any still checks the type";
  e.exact = {"."};
  EXPECT_FALSE(MatchBody(e, json::parse(R"({"a": 1, "b": {"c": "y"}, "n": 7, "z": 0})"), b, &why));
}

TEST(MatchBodyTest, ArraysInOrderOrAsSubsets) {
  Bindings b;
  std::string why;
  Expectation e = Expect(R"({"r": [{"k": "x"}, {"k": "y"}]})");
  EXPECT_TRUE(MatchBody(e, json::parse(R"({"r": [{"k": "x"}, {"k": "y"}]})"), b, &why));
  EXPECT_FALSE(MatchBody(e, json::parse(R"({"r": [{"k": "y"}, {"k": "x"}]})"), b, &why));
  EXPECT_FALSE(
      MatchBody(e, json::parse(R"({"r": [{"k": "x"}, {"k": "y"}, {"k": "z"}]})"), b, &why));
  e.subset = {".r"};
  EXPECT_TRUE(MatchBody(e, json::parse(R"({"r": [{"k": "z"}, {"k": "y"}, {"k": "x"}]})"), b, &why));
  EXPECT_FALSE(MatchBody(e, json::parse(R"({"r": [{"k": "x"}, {"k": "x"}]})"), b, &why))
      << "one answer item cannot match two expected ones";
  e = Expect(R"({"r": [{"k": "x", "s": 0.9}]})");
  e.any = {".r[*].s"};
  EXPECT_TRUE(MatchBody(e, json::parse(R"({"r": [{"k": "x", "s": 0.1}]})"), b, &why)) << why;
}

TEST(MatchBodyTest, BindingsBindOnceAndSubstitute) {
  Bindings b;
  std::string why;
  Expectation e = Expect(R"({"results": ["m-1", "m-2"]})");
  e.binds = {"m-1", "m-2"};
  ASSERT_TRUE(MatchBody(e, json::parse(R"({"results": ["m-aaa", "m-bbb"]})"), b, &why)) << why;
  EXPECT_EQ(b.at("m-1"), "m-aaa");
  EXPECT_EQ(b.at("m-2"), "m-bbb");
  // Bound: the literal now means its value, also inside a longer string.
  Expectation later = Expect(R"({"id": "m-2", "message": "Memory m-2 deleted"})");
  EXPECT_TRUE(MatchBody(later, json::parse(R"({"id": "m-bbb", "message": "Memory m-bbb deleted"})"),
                        b, &why))
      << why;
  EXPECT_FALSE(MatchBody(later, json::parse(R"({"id": "m-aaa", "message": "x"})"), b, &why));
  EXPECT_EQ(Substitute("GET /memories/m-2?x=m-1", b), "GET /memories/m-bbb?x=m-aaa");
  // A failed match binds nothing.
  Bindings fresh;
  Expectation pair = Expect(R"({"a": "id-1", "b": "no"})");
  pair.binds = {"id-1"};
  EXPECT_FALSE(MatchBody(pair, json::parse(R"({"a": "v", "b": "yes"})"), fresh, &why));
  EXPECT_TRUE(fresh.empty());
}

TEST(ValueAtTest, Paths) {
  json doc = json::parse(R"({"a": {"b": [1, {"c": "x"}]}})");
  EXPECT_EQ(ValueAt(doc, ".a.b[1].c"), "x");
  EXPECT_EQ(ValueAt(doc, ".a.b[0]"), 1);
  EXPECT_TRUE(ValueAt(doc, ".a.z").is_null());
  EXPECT_TRUE(ValueAt(doc, ".a.b[9]").is_null());
  EXPECT_EQ(ValueAt(doc, "."), doc);
}

}  // namespace
}  // namespace engram::contract
