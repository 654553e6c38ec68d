#include "api/router.h"

#include <gtest/gtest.h>

namespace engram {
namespace {

Route R(const std::string& method, const std::string& pattern, const std::string& name) {
  return Route{.method = method, .pattern = pattern, .name = name};
}

TEST(RouterTest, MatchesLiteralAndParams) {
  Router router;
  router.Add(R("GET", "/v4/openapi/workspaces/{workspace}/memory/{service_id}/memories/{id}", "get"));
  router.Add(R("PUT", "/v4/openapi/workspaces/{workspace}/memory/{service_id}/memories/{id}", "put"));
  router.Add(R("POST", "/leaderboard/add", "add"));

  auto m = router.Find("GET", "/v4/openapi/workspaces/w1/memory/agentic-memory/memories/m-1");
  ASSERT_NE(m.route, nullptr);
  EXPECT_EQ(m.route->name, "get");
  EXPECT_EQ(m.params["workspace"], "w1");
  EXPECT_EQ(m.params["id"], "m-1");

  auto put = router.Find("PUT", "/v4/openapi/workspaces/w1/memory/agentic-memory/memories/m-1");
  ASSERT_NE(put.route, nullptr);
  EXPECT_EQ(put.route->name, "put");

  auto wrong_method = router.Find("GET", "/leaderboard/add");
  EXPECT_EQ(wrong_method.route, nullptr);
  EXPECT_TRUE(wrong_method.method_mismatch);

  auto none = router.Find("GET", "/leaderboard/nothing");
  EXPECT_EQ(none.route, nullptr);
  EXPECT_FALSE(none.method_mismatch);

  EXPECT_NE(router.Find("POST", "/leaderboard/add/").route, nullptr);
}

}  // namespace
}  // namespace engram
