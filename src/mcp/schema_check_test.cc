#include "mcp/schema_check.h"

#include <gtest/gtest.h>

namespace engram::mcp {
namespace {

using json = nlohmann::json;

const json kSchema = json::parse(R"({
  "type": "object", "additionalProperties": false, "required": ["query"],
  "properties": {
    "query": {"type": "string", "minLength": 1, "maxLength": 5},
    "top_k": {"type": "integer", "minimum": 1, "maximum": 10},
    "threshold": {"type": "number", "minimum": 0, "maximum": 1},
    "when": {"type": ["number", "string"]},
    "messages": {"anyOf": [{"type": "string"},
                           {"type": "array", "minItems": 1, "items": {
                              "type": "object", "required": ["role"],
                              "properties": {"role": {"enum": ["user", "assistant"]}}}}]}
  }})");

std::string Problem(const json& v) {
  Status s = CheckAgainstSchema(v, kSchema);
  return s.ok() ? "" : s.message();
}

TEST(SchemaCheckTest, AcceptsValidArguments) {
  EXPECT_EQ(Problem({{"query", "tea"}, {"top_k", 3}, {"threshold", 0.5}, {"when", "x"}}), "");
  EXPECT_EQ(Problem({{"query", "tea"}, {"messages", "hi"}}), "");
  EXPECT_EQ(Problem({{"query", "茶茶茶茶茶"}}), "");  // characters, not bytes
}

TEST(SchemaCheckTest, NamesTheArgumentAndTheProblem) {
  EXPECT_EQ(Problem(json::object()), "query is required");
  EXPECT_EQ(Problem({{"query", ""}}), "query must not be empty");
  EXPECT_EQ(Problem({{"query", "toolong"}}), "query is too long: 7 characters, at most 5 allowed");
  EXPECT_EQ(Problem({{"query", 5}}), "query must be a string, got an integer");
  EXPECT_EQ(Problem({{"query", "a"}, {"top_k", 0}}), "top_k must be at least 1");
  EXPECT_EQ(Problem({{"query", "a"}, {"top_k", 2.5}}),
            "top_k must be an integer, got a number with a fraction");
  EXPECT_EQ(Problem({{"query", "a"}, {"threshold", 2}}), "threshold must be at most 1");
  EXPECT_EQ(Problem({{"query", "a"}, {"when", true}}),
            "when must be a number or a string, got a boolean");
  EXPECT_EQ(Problem({{"query", "a"}, {"colour", 1}}),
            "colour is not a known argument; known: messages, query, threshold, top_k, when");
  EXPECT_EQ(Problem({{"query", "a"}, {"messages", 3}}),
            "messages must be a string or an array, got an integer");
  EXPECT_EQ(Problem({{"query", "a"}, {"messages", json::array()}}),
            "messages must have at least 1 item(s)");
  EXPECT_EQ(Problem({{"query", "a"}, {"messages", {{{"role", "robot"}}}}}),
            "messages[0].role must be one of \"user\" or \"assistant\"");
  EXPECT_EQ(Problem(json::array()), "arguments must be an object, got an array");
}

TEST(SchemaCheckTest, ReportsKeywordsOutsideTheSubset) {
  EXPECT_TRUE(UnsupportedKeywords(kSchema).empty());
  auto extra = UnsupportedKeywords(json::parse(
      R"({"type":"object","properties":{"a":{"type":"string","pattern":"x"}},"not":{},
          "oneOf":[{"$ref":"#/x"}]})"));
  EXPECT_EQ(extra, (std::vector<std::string>{"not", "properties.a.pattern", "oneOf[0].$ref"}));
}

// An OpenAPI document's request schema: references, combinators and nullable.
const json kDocument = json::parse(R"({
  "paths": {"/add": {"post": {"requestBody": {"content": {"application/json": {"schema":
      {"$ref": "#/components/schemas/Add"}}}}}}},
  "components": {"schemas": {
    "Add": {"allOf": [{"$ref": "#/components/schemas/Scope"}, {
      "type": "object", "required": ["messages"],
      "properties": {
        "messages": {"oneOf": [{"type": "string"},
                               {"type": "array", "items": {"$ref": "#/components/schemas/Message"}}]},
        "timestamp": {"type": "integer", "nullable": true}}}]},
    "Scope": {"type": "object", "properties": {"user_id": {"type": "string", "format": "id"}}},
    "Message": {"type": "object", "required": ["content"], "properties": {
        "content": {"type": "string"}, "reply": {"$ref": "#/components/schemas/Message"}}},
    "Loop": {"$ref": "#/components/schemas/Loop"},
    "Both": {"oneOf": [{"type": "number"}, {"type": "integer"}]}
  }}})");

std::string DocumentProblem(const json& v, const std::string& schema_ref) {
  Status s = CheckAgainstSchema(v, json{{"$ref", schema_ref}}, kDocument);
  return s.ok() ? "" : s.message();
}

TEST(SchemaCheckTest, ResolvesReferencesAndCombinatorsInADocument) {
  const std::string add = "#/components/schemas/Add";
  EXPECT_EQ(DocumentProblem({{"messages", "hi"}, {"user_id", "u"}}, add), "");
  EXPECT_EQ(DocumentProblem({{"messages", {{{"content", "a"}, {"reply", {{"content", "b"}}}}}},
                             {"timestamp", nullptr}},
                            add),
            "");
  EXPECT_EQ(DocumentProblem({{"user_id", "u"}}, add), "messages is required");
  EXPECT_EQ(DocumentProblem({{"messages", "hi"}, {"user_id", 7}}, add),
            "user_id must be a string, got an integer");
  EXPECT_EQ(DocumentProblem({{"messages", {{{"reply", {{"content", 1}}}}}}}, add),
            "messages[0].content is required");
  EXPECT_EQ(DocumentProblem({{"messages", "hi"}, {"timestamp", "now"}}, add),
            "timestamp must be an integer, got a string");
  // oneOf: an integer is also a number, so it matches both forms.
  EXPECT_EQ(DocumentProblem(2, "#/components/schemas/Both"),
            "arguments matches more than one of its forms");
  EXPECT_EQ(DocumentProblem(2.5, "#/components/schemas/Both"), "");
  // Broken documents are errors, not passes.
  EXPECT_EQ(DocumentProblem(1, "#/components/schemas/Nothing"),
            "schema reference #/components/schemas/Nothing names nothing");
  EXPECT_EQ(DocumentProblem(1, "#/components/schemas/Loop"),
            "schema reference #/components/schemas/Loop nests too deep");
  EXPECT_FALSE(CheckAgainstSchema(1, json{{"$ref", add}}).ok());  // no document to resolve it in
}

}  // namespace
}  // namespace engram::mcp
