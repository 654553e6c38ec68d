#include "api/router.h"

#include <gtest/gtest.h>

namespace engram {
namespace {

Route R(const std::string& method, const std::string& pattern, const std::string& name) {
  return Route{.method = method, .pattern = pattern, .name = name};
}

TEST(RouterTest, MatchesLiteralAndParams) {
  Router router;
  router.Add(
      R("GET", "/v4/openapi/workspaces/{workspace}/memory/{service_id}/memories/{id}", "get"));
  router.Add(
      R("PUT", "/v4/openapi/workspaces/{workspace}/memory/{service_id}/memories/{id}", "put"));
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

// The path is split at its '/' before decoding: an encoded '/' stays inside its parameter, and
// literal segments match in any encoding.
TEST(RouterTest, SegmentsAreDecodedAfterSplitting) {
  Router router;
  router.Add(R("DELETE", "/leaderboard/users/{user_id}", "delete_user"));
  auto m = router.Find("DELETE", "/leaderboard/users/team%2Falice");
  ASSERT_NE(m.route, nullptr);
  EXPECT_EQ(m.params["user_id"], "team/alice");
  EXPECT_EQ(router.Find("DELETE", "/leaderboard/users/team/alice").route, nullptr);
  auto spaced = router.Find("DELETE", "/leader%62oard/users/a%20b");
  ASSERT_NE(spaced.route, nullptr);
  EXPECT_EQ(spaced.params["user_id"], "a b");
  EXPECT_NE(router.FindRoute("DELETE", "/leaderboard/users/x%2Fy"), nullptr);
}

// A parameter no id can be (a body's JSON string could not carry it either) is named, so the
// request is refused 400 rather than taken literally.
TEST(RouterTest, MalformedParametersAreNamed) {
  Router router;
  router.Add(R("DELETE", "/leaderboard/users/{user_id}", "delete_user"));
  router.Add(R("GET", "/ws/{workspace}/memories/{memory_id}", "get"));
  EXPECT_EQ(router.Find("DELETE", "/leaderboard/users/alice").malformed_param, "");
  EXPECT_EQ(router.Find("DELETE", "/leaderboard/users/caf%C3%A9").malformed_param, "");
  for (const char* bad :
       {"/leaderboard/users/a%zz", "/leaderboard/users/a%2", "/leaderboard/users/%",
        "/leaderboard/users/a%00b", "/leaderboard/users/%FF%FE"}) {
    auto m = router.Find("DELETE", bad);
    ASSERT_NE(m.route, nullptr) << bad;
    EXPECT_EQ(m.malformed_param, "user_id") << bad;
  }
  EXPECT_EQ(router.Find("GET", "/ws/default/memories/m%00").malformed_param, "memory_id");
  EXPECT_EQ(router.Find("GET", "/ws/d%zz/memories/m").malformed_param, "workspace");
}

TEST(RouterTest, TheMostSpecificPatternNamesThePath) {
  Router router;
  const std::string base = "/v4/openapi/workspaces/{workspace}/memory/{service_id}/memories/";
  router.Add(R("GET", base + "{memory_id}", "get"));
  router.Add(R("DELETE", base + "{memory_id}", "delete"));
  router.Add(R("POST", base + "add", "add"));
  router.Add(R("POST", base + "search", "search"));
  const std::string p = "/v4/openapi/workspaces/w/memory/agentic-memory/memories/";

  // "add" is the action, not a memory id: other methods on it are a 405, whatever the order in
  // which the routes were added.
  for (const char* method : {"GET", "DELETE", "PUT"}) {
    auto m = router.Find(method, p + "add");
    EXPECT_EQ(m.route, nullptr) << method;
    EXPECT_TRUE(m.method_mismatch) << method;
  }
  auto add = router.Find("POST", p + "add");
  ASSERT_NE(add.route, nullptr);
  EXPECT_EQ(add.route->name, "add");
  EXPECT_TRUE(add.params.count("memory_id") == 0);

  // Ids still reach the parameter routes.
  auto get = router.Find("GET", p + "m-1");
  ASSERT_NE(get.route, nullptr);
  EXPECT_EQ(get.route->name, "get");
  EXPECT_EQ(get.params["memory_id"], "m-1");
  auto post_id = router.Find("POST", p + "m-1");
  EXPECT_EQ(post_id.route, nullptr);
  EXPECT_TRUE(post_id.method_mismatch);
}

// ParsedHandler asks its probe about the parsed request on an I/O thread only; a parse failure
// answers before the probe, and a probe that says no sends the request to a worker unrun.
TEST(RouterTest, ParsedHandlerProbesWhatItParsed) {
  int probes = 0, runs = 0;
  RouteHandler handler = ParsedHandler<int>(
      {.parse = [](const HttpRequest& req, RequestContext&) -> Result<int> {
         if (req.body.empty()) return Status::InvalidParameter("body is required");
         return static_cast<int>(req.body.size());
       },
       .ready =
           [&probes](const int& n) {
             ++probes;
             return n < 3;  // a "large" request must not run on an I/O thread
           },
       .run = [&runs](int&& n, const HttpRequest&, RequestContext&) -> Result<HttpResponse> {
         ++runs;
         HttpResponse r;
         r.body = std::to_string(n);
         return r;
       }});
  RequestContext ctx;
  HttpRequest req;
  req.on_io_thread = true;
  auto refused = handler(req, ctx);
  EXPECT_EQ(refused.status().code(), StatusCode::kInvalidParameter);
  EXPECT_EQ(probes, 0);

  req.body = "ab";
  auto inline_answer = handler(req, ctx);
  ASSERT_TRUE(inline_answer.ok());
  EXPECT_FALSE(inline_answer->run_on_worker);
  EXPECT_EQ(inline_answer->body, "2");

  req.body = "abcd";
  auto moved = handler(req, ctx);
  ASSERT_TRUE(moved.ok());
  EXPECT_TRUE(moved->run_on_worker);
  EXPECT_EQ(runs, 1);

  req.on_io_thread = false;  // on the worker: no probe, it runs
  auto on_worker = handler(req, ctx);
  ASSERT_TRUE(on_worker.ok());
  EXPECT_EQ(on_worker->body, "4");
  EXPECT_EQ(probes, 2);
  EXPECT_EQ(runs, 2);
}

}  // namespace
}  // namespace engram
