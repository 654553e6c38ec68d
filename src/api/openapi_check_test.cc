#include "api/openapi_check.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "api/ops_api.h"

namespace engram {
namespace {

Route R(const std::string& method, const std::string& pattern) {
  return Route{.method = method, .pattern = pattern, .name = "r"};
}

TEST(OpenApiCheckTest, AgreeingTableAndDocumentPass) {
  Router router;
  router.Add(R("POST", "/v4/openapi/workspaces/{workspace}/memories/add"));
  router.Add(R("GET", "/v4/openapi/workspaces/{workspace}/memories/{memory_id}"));
  router.Add(R("DELETE", "/v4/openapi/workspaces/{workspace}/memories/{memory_id}"));
  const char* doc = R"({"openapi": "3.0.3", "paths": {
      "/v4/openapi/workspaces/{workspace_name}/memories/add": {"post": {}},
      "/v4/openapi/workspaces/{workspace_name}/memories/{id}": {"get": {}, "delete": {},
                                                                 "parameters": []}}})";
  EXPECT_TRUE(CompareRoutesWithOpenApi(router, doc).empty());
}

TEST(OpenApiCheckTest, ReportsBothDirections) {
  Router router;
  router.Add(R("POST", "/a"));
  router.Add(R("GET", "/b/{id}"));
  const char* doc = R"({"paths": {"/a": {"post": {}, "get": {}}, "/c": {"put": {}}}})";
  auto problems = CompareRoutesWithOpenApi(router, doc);
  ASSERT_EQ(problems.size(), 3u);
  EXPECT_EQ(problems[0], "GET /b/{}: routed but not in openapi.json");
  EXPECT_EQ(problems[1], "GET /a: documented but not routed");
  EXPECT_EQ(problems[2], "PUT /c: documented but not routed");
}

TEST(OpenApiCheckTest, MalformedDocumentIsOneProblem) {
  Router router;
  EXPECT_EQ(CompareRoutesWithOpenApi(router, "{not json").size(), 1u);
  EXPECT_EQ(CompareRoutesWithOpenApi(router, R"({"openapi": "3.0.3"})").size(), 1u);
}

TEST(OpenApiCheckTest, TheShippedDocumentParses) {
  // The full route table needs the services (modules_test compares it). Here: the compiled-in
  // document is well formed.
  Router router;
  auto problems = CompareRoutesWithOpenApi(router, OpenApiDocument());
  ASSERT_FALSE(problems.empty());
  EXPECT_NE(problems.front().find("documented but not routed"), std::string::npos)
      << problems.front();
}

TEST(OpenApiCheckTest, EveryOperationDescribesItsSuccessBody) {
  // Clients generate code from the document: each operation's 2xx answer names its content, or
  // is a 204 (no body). An operation documented only as refused (a 405 the route answers so
  // that clients learn what is allowed) has no success to describe.
  const auto doc = nlohmann::json::parse(OpenApiDocument());
  for (const auto& [path, item] : doc["paths"].items()) {
    for (const auto& [method, op] : item.items()) {
      if (method == "parameters") continue;
      bool any_success = false, described = false;
      for (const auto& [code, response] : op["responses"].items()) {
        if (code.size() != 3 || code[0] != '2') continue;
        any_success = true;
        if (response.contains("content") || code == "204") described = true;
      }
      if (!any_success) {
        EXPECT_TRUE(op["responses"].contains("405")) << method << " " << path;
        continue;
      }
      EXPECT_TRUE(described) << method << " " << path;
    }
  }
}

}  // namespace
}  // namespace engram
