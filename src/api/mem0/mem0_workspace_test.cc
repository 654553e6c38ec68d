// Which workspace a mem0 request works on: project_id, else the key's only workspace, else the
// default; always checked against the key.
#include "api/mem0/mem0_workspace.h"

#include <gtest/gtest.h>

namespace engram {
namespace {

HttpRequest WithKey(const std::string& key) {
  HttpRequest r;
  r.headers.emplace_back("authorization", "Token " + key);
  return r;
}

TEST(Mem0WorkspaceTest, ProjectThenSoleWorkspaceThenDefault) {
  auto auth = ApiKeyAuth::FromSpecs({"admin", "solo:alpha", "pair:alpha:beta"});
  ASSERT_TRUE(auth.ok());
  const nlohmann::json body = {{"project_id", "beta"}};
  EXPECT_EQ(*ResolveMem0Workspace(WithKey("admin"), {}, nullptr, *auth, "default"), "default");
  EXPECT_EQ(
      *ResolveMem0Workspace(WithKey("admin"), {{"project_id", "gamma"}}, nullptr, *auth, "default"),
      "gamma");
  EXPECT_EQ(*ResolveMem0Workspace(WithKey("admin"), {}, &body, *auth, "default"), "beta");
  EXPECT_EQ(*ResolveMem0Workspace(WithKey("solo"), {}, nullptr, *auth, "default"), "alpha");
  EXPECT_EQ(*ResolveMem0Workspace(WithKey("pair"), {}, &body, *auth, "default"), "beta");
  // A key limited to several workspaces, without a project: the default, which it may not use.
  EXPECT_EQ(ResolveMem0Workspace(WithKey("pair"), {}, nullptr, *auth, "default").status().code(),
            StatusCode::kForbidden);
  EXPECT_EQ(
      ResolveMem0Workspace(WithKey("solo"), {{"project_id", "beta"}}, nullptr, *auth, "default")
          .status()
          .code(),
      StatusCode::kForbidden);
  EXPECT_EQ(ResolveMem0Workspace(WithKey("nope"), {}, nullptr, *auth, "default").status().code(),
            StatusCode::kUnauthenticated);
  EXPECT_EQ(
      ResolveMem0Workspace(WithKey("admin"), {{"project_id", "a b"}}, nullptr, *auth, "default")
          .status()
          .code(),
      StatusCode::kInvalidParameter);
  // mem0's clients type project_id as a string or a number.
  const nlohmann::json numbered = {{"project_id", 42}};
  EXPECT_EQ(*ResolveMem0Workspace(WithKey("admin"), {}, &numbered, *auth, "default"), "42");
  for (const nlohmann::json& bad :
       {nlohmann::json{{"project_id", 4.5}}, nlohmann::json{{"project_id", true}},
        nlohmann::json{{"project_id", nlohmann::json::array()}}}) {
    auto refused = ResolveMem0Workspace(WithKey("admin"), {}, &bad, *auth, "default");
    EXPECT_EQ(refused.status().code(), StatusCode::kInvalidParameter) << bad.dump();
  }
}

}  // namespace
}  // namespace engram
