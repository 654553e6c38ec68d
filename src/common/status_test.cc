#include "common/status.h"

#include <gtest/gtest.h>

namespace engram {
namespace {

TEST(StatusTest, MapsCodesToHttp) {
  EXPECT_EQ(HttpStatusOf(StatusCode::kInvalidParameter), 400);
  EXPECT_EQ(HttpStatusOf(StatusCode::kConflict), 409);
  EXPECT_STREQ(ApiCodeOf(StatusCode::kUnauthenticated), "InvalidApiKey");
  EXPECT_STREQ(ApiCodeOf(StatusCode::kThrottled), "Throttling.RateQuota");
}

TEST(StatusTest, ResultHoldsValueOrError) {
  Result<int> good(5);
  ASSERT_TRUE(good.ok());
  EXPECT_EQ(*good, 5);
  Result<int> bad(Status::NotFound("x"));
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().code(), StatusCode::kNotFound);
  EXPECT_EQ(bad.status().ToString(), "NotFound: x");
}

}  // namespace
}  // namespace engram
