#include "api/auth.h"

#include <gtest/gtest.h>

namespace engram {
namespace {

HttpRequest WithHeader(const std::string& name, const std::string& value) {
  HttpRequest r;
  r.headers.emplace_back(name, value);
  return r;
}

TEST(ApiKeyAuthTest, DevModeWithoutKeys) {
  auto auth = ApiKeyAuth::FromSpecs({});
  ASSERT_TRUE(auth.ok());
  EXPECT_TRUE(auth->dev_mode());
  EXPECT_TRUE(auth->Check(HttpRequest{}, "default").ok());
}

TEST(ApiKeyAuthTest, AcceptsThreeHeaderForms) {
  auto auth = ApiKeyAuth::FromSpecs({"k1", " k2 "});
  ASSERT_TRUE(auth.ok());
  EXPECT_TRUE(auth->Check(WithHeader("authorization", "Bearer k1"), "w").ok());
  EXPECT_TRUE(auth->Check(WithHeader("authorization", "token k2"), "w").ok());
  EXPECT_TRUE(auth->Check(WithHeader("x-api-key", "k1"), "w").ok());
  EXPECT_EQ(auth->Check(HttpRequest{}, "w").code(), StatusCode::kUnauthenticated);
  EXPECT_EQ(auth->Check(WithHeader("authorization", "Bearer nope"), "w").code(),
            StatusCode::kUnauthenticated);
  EXPECT_EQ(auth->Check(WithHeader("authorization", "Basic k1"), "w").code(),
            StatusCode::kUnauthenticated);
  EXPECT_EQ(auth->Check(WithHeader("authorization", "Bearer k"), "w").code(),
            StatusCode::kUnauthenticated);  // a prefix of a key is not the key
}

TEST(ApiKeyAuthTest, WorkspaceScopedKeys) {
  auto auth = ApiKeyAuth::FromSpecs({"admin", "team:alpha:beta"});
  ASSERT_TRUE(auth.ok());
  EXPECT_TRUE(auth->Check(WithHeader("x-api-key", "team"), "alpha").ok());
  EXPECT_EQ(auth->Check(WithHeader("x-api-key", "team"), "gamma").code(), StatusCode::kForbidden);
  EXPECT_TRUE(auth->Check(WithHeader("x-api-key", "admin"), "gamma").ok());
  EXPECT_FALSE(ApiKeyAuth::FromSpecs({":ws"}).ok());
  EXPECT_FALSE(ApiKeyAuth::FromSpecs({"k::ws"}).ok());
}

TEST(ApiKeyAuthTest, AnyWorkspaceAndSoleWorkspace) {
  auto auth = ApiKeyAuth::FromSpecs({"admin", "team:alpha:beta", "solo:alpha"});
  ASSERT_TRUE(auth.ok());
  EXPECT_TRUE(auth->CheckAnyWorkspace(WithHeader("x-api-key", "team")).ok());
  EXPECT_EQ(auth->CheckAnyWorkspace(WithHeader("x-api-key", "nope")).code(),
            StatusCode::kUnauthenticated);
  EXPECT_EQ(auth->SoleWorkspace(WithHeader("authorization", "Token solo")), "alpha");
  EXPECT_EQ(auth->SoleWorkspace(WithHeader("x-api-key", "team")), std::nullopt);
  EXPECT_EQ(auth->SoleWorkspace(WithHeader("x-api-key", "admin")), std::nullopt);
  EXPECT_EQ(auth->SoleWorkspace(WithHeader("x-api-key", "nope")), std::nullopt);
}

TEST(ApiKeyAuthTest, LimitedToNamesTheKeysWorkspaces) {
  using Names = std::optional<std::vector<std::string>>;
  auto auth = ApiKeyAuth::FromSpecs({"admin", "team:beta:alpha"});
  ASSERT_TRUE(auth.ok());
  EXPECT_EQ(*auth->LimitedTo(WithHeader("x-api-key", "team")),
            Names(std::vector<std::string>{"beta", "alpha"}));
  EXPECT_EQ(*auth->LimitedTo(WithHeader("x-api-key", "admin")), Names());
  EXPECT_EQ(auth->LimitedTo(WithHeader("x-api-key", "nope")).status().code(),
            StatusCode::kUnauthenticated);
  auto dev = ApiKeyAuth::FromSpecs({});
  ASSERT_TRUE(dev.ok());
  EXPECT_EQ(*dev->LimitedTo(HttpRequest{}), Names());
}

}  // namespace
}  // namespace engram
