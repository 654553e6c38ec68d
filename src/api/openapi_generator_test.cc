#include "api/openapi_generator.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "api/ops_api.h"

namespace engram {
namespace {

using nlohmann::json;

constexpr std::string_view kBase = R"({
  "openapi": "3.1.0",
  "info": {"title": "T", "version": "0"},
  "tags": [{"name": "memories"}],
  "security": [{"bearer": []}],
  "components": {
    "securitySchemes": {"bearer": {"type": "http", "scheme": "bearer"}},
    "parameters": {
      "workspace_name": {"name": "workspace_name", "in": "path", "required": true,
                         "schema": {"type": "string"}}
    }
  }
})";

constexpr std::string_view kApi = R"({
  "operations": {
    "get": {"summary": "one memory", "tags": ["memories"],
            "parameters": [{"name": "user_id", "in": "query", "schema": {"type": "string"}}],
            "responses": {"200": {"description": "it",
                                  "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Memory"}}}}}},
    "health": {"summary": "up?", "tags": ["memories"], "responses": {"200": {"description": "yes"}}}
  },
  "components": {"schemas": {"Memory": {"type": "object"}}}
})";

Route R(std::string method, std::string pattern, std::string name,
        AuthMode auth = AuthMode::kApiKey, std::string doc = "") {
  return Route{.method = std::move(method),
               .pattern = std::move(pattern),
               .name = std::move(name),
               .doc = std::move(doc),
               .auth = auth};
}

Result<std::string> Generate(const Router& router, std::string_view api = kApi) {
  const OpenApiFragment fragments[] = {{"base.json", kBase}, {"api.openapi.json", api}};
  return GenerateOpenApi(router, fragments, "1.2.3");
}

TEST(OpenApiGeneratorTest, PathsAndMethodsComeFromTheRoutes) {
  Router router;
  router.Add(
      R("GET", "/w/{workspace_name}/memories/{memory_id}", "memory_get", AuthMode::kApiKey, "get"));
  router.Add(R("GET", "/health", "health", AuthMode::kNone));
  auto text = Generate(router);
  ASSERT_TRUE(text.ok()) << text.status().message();
  const json doc = json::parse(*text);
  EXPECT_EQ(doc.at("info").at("version"), "1.2.3");
  EXPECT_EQ(doc.at("components").at("schemas").at("Memory").at("type"), "object");
  const json& get = doc.at("paths").at("/w/{workspace_name}/memories/{memory_id}").at("get");
  EXPECT_EQ(get["summary"], "one memory");
  // The path's parameters in its order: a shared one by reference, the other a plain string; then
  // the operation's own.
  ASSERT_EQ(get["parameters"].size(), 3u);
  EXPECT_EQ(get["parameters"][0]["$ref"], "#/components/parameters/workspace_name");
  EXPECT_EQ(get["parameters"][1]["name"], "memory_id");
  EXPECT_EQ(get["parameters"][1]["in"], "path");
  EXPECT_EQ(get["parameters"][2]["name"], "user_id");
  EXPECT_FALSE(get.contains("security"));
  // An open route says so.
  EXPECT_EQ(doc.at("paths").at("/health").at("get").at("security"), json::array());
}

TEST(OpenApiGeneratorTest, WhatCannotBeRightIsAnError) {
  // A route without its operation, and an operation no route uses.
  Router missing;
  missing.Add(R("GET", "/health", "health", AuthMode::kNone));
  missing.Add(R("GET", "/other", "other"));
  auto text = Generate(missing);
  ASSERT_FALSE(text.ok());
  EXPECT_NE(text.status().message().find("no fragment declares operation other"),
            std::string::npos);
  EXPECT_NE(text.status().message().find("operation get documents no route"), std::string::npos);

  // A path parameter the path does not have; a $ref to nothing; an open route documented as
  // keyed.
  Router router;
  router.Add(R("GET", "/m", "get"));
  router.Add(R("GET", "/health", "health", AuthMode::kApiKey));
  auto wrong = Generate(router, R"({"operations": {
    "get": {"parameters": [{"name": "memory_id", "in": "path", "required": true}],
            "responses": {"200": {"description": "x",
              "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Gone"}}}}}},
    "health": {"security": [], "tags": ["other"], "responses": {"200": {"description": "yes"}}}}})");
  ASSERT_FALSE(wrong.ok());
  const std::string& m = wrong.status().message();
  EXPECT_NE(m.find("path parameter memory_id is not in the path"), std::string::npos) << m;
  EXPECT_NE(m.find("$ref \"#/components/schemas/Gone\" names nothing"), std::string::npos) << m;
  EXPECT_NE(m.find("security says the route is open, the route says keyed"), std::string::npos)
      << m;
  EXPECT_NE(m.find("GET /m (get): no tags"), std::string::npos) << m;
  EXPECT_NE(m.find("tag \"other\" is not in the document's tags"), std::string::npos) << m;

  // The same component or operation declared by two fragments.
  const OpenApiFragment twice[] = {
      {"base.json", kBase}, {"a.openapi.json", kApi}, {"b.openapi.json", kApi}};
  auto duplicated = GenerateOpenApi(router, twice, "1");
  ASSERT_FALSE(duplicated.ok());
  EXPECT_NE(duplicated.status().message().find("operation get is also declared in a.openapi.json"),
            std::string::npos);
  EXPECT_NE(duplicated.status().message().find("components.schemas.Memory is declared twice"),
            std::string::npos);

  // A route twice, two paths of one shape, a parameter listed twice.
  Router twice_routed;
  twice_routed.Add(R("GET", "/m/{id}", "get"));
  twice_routed.Add(R("GET", "/m/{memory_id}", "get"));
  twice_routed.Add(R("GET", "/health", "health", AuthMode::kNone));
  twice_routed.Add(R("GET", "/health", "health", AuthMode::kNone));
  auto shapes = Generate(twice_routed, R"({"operations": {
    "get": {"tags": ["memories"], "parameters": [
              {"name": "q", "in": "query"}, {"name": "q", "in": "query"}],
            "responses": {"200": {"description": "x"}}},
    "health": {"tags": ["memories"], "responses": {"200": {"description": "yes"}}}}})");
  ASSERT_FALSE(shapes.ok());
  const std::string& why = shapes.status().message();
  EXPECT_NE(why.find("GET /health (health): routed twice"), std::string::npos) << why;
  EXPECT_NE(why.find("the same path as /m/{id} with other parameter names"), std::string::npos)
      << why;
  EXPECT_NE(why.find("query parameter q is listed twice"), std::string::npos) << why;

  // A fragment of another shape is an error, not an exception.
  Router one;
  one.Add(R("GET", "/m", "get"));
  auto malformed = Generate(one, R"({"operations": {"get": {"tags": ["memories"],
    "parameters": [{"name": 7, "in": ["path"]}], "responses": 5}}})");
  ASSERT_FALSE(malformed.ok());
  EXPECT_NE(malformed.status().message().find("a parameter without in and name"), std::string::npos)
      << malformed.status().message();
  auto not_object = Generate(one, R"({"operations": [1, 2]})");
  ASSERT_FALSE(not_object.ok());
  EXPECT_NE(not_object.status().message().find("operations is not an object"), std::string::npos);

  // A parameter $ref that names a schema; braces that do not pair; a "$ref" key in example data
  // is data, not a reference.
  Router braces;
  braces.Add(R("GET", "/m/{id", "get"));
  auto odd = Generate(braces, R"({"operations": {"get": {"tags": ["memories"],
    "parameters": [{"$ref": "#/components/schemas/Memory"}],
    "responses": {"200": {"description": "x", "content": {"application/json": {
      "schema": {"type": "object"}, "example": {"$ref": "not a reference"}}}}}}}})");
  ASSERT_FALSE(odd.ok());
  const std::string& said = odd.status().message();
  EXPECT_NE(said.find("is not a parameter"), std::string::npos) << said;
  EXPECT_NE(said.find("the path's braces do not pair"), std::string::npos) << said;
  EXPECT_EQ(said.find("not a reference"), std::string::npos) << said;
}

TEST(OpenApiGeneratorTest, EveryShippedOperationDescribesItsSuccessBody) {
  // Clients generate code from the document: each operation's 2xx answer names its content, or
  // is a 204 (no body). An operation documented only as refused (a 405 the route answers so
  // that clients learn what is allowed) has no success to describe.
  const auto doc = json::parse(OpenApiDocument());
  for (const auto& [path, item] : doc.at("paths").items()) {
    for (const auto& [method, op] : item.items()) {
      bool any_success = false, described = false;
      for (const auto& [code, response] : op.at("responses").items()) {
        if (code.size() != 3 || code[0] != '2') continue;
        any_success = true;
        if (response.contains("content") || code == "204") described = true;
      }
      if (!any_success) {
        EXPECT_TRUE(op.at("responses").contains("405")) << method << " " << path;
        continue;
      }
      EXPECT_TRUE(described) << method << " " << path;
    }
  }
}

// The error envelope's documented codes are the codes a Status can carry.
TEST(OpenApiGeneratorTest, TheErrorCodesAreEveryStatusCode) {
  const auto doc = json::parse(OpenApiDocument());
  const json& codes = doc.at(json::json_pointer("/components/schemas/Error/properties/code/enum"));
  std::vector<std::string> expected;
  for (int c = static_cast<int>(StatusCode::kInvalidParameter);
       c <= static_cast<int>(StatusCode::kUnavailable); ++c) {
    expected.emplace_back(ApiCodeOf(static_cast<StatusCode>(c)));
  }
  EXPECT_EQ(codes.get<std::vector<std::string>>(), expected);
}

}  // namespace
}  // namespace engram
