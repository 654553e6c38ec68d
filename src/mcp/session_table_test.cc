#include "mcp/session_table.h"

#include <gtest/gtest.h>

namespace engram::mcp {
namespace {

using namespace std::chrono_literals;

class SessionTableTest : public ::testing::Test {
 protected:
  SessionTable Table(size_t max) {
    return SessionTable({.max_sessions = max, .idle_timeout = 10min}, [this] { return now_; });
  }
  std::chrono::steady_clock::time_point now_{};
};

TEST_F(SessionTableTest, FindsASessionOnlyWithItsWorkspaceAndCredential) {
  SessionTable t = Table(10);
  auto s = t.Create("ws", CredentialDigest("key"), "2025-11-25");
  ASSERT_TRUE(s.ok());
  EXPECT_EQ(s->id.size(), 48u);
  for (char c : s->id) EXPECT_TRUE(c > 0x20 && c < 0x7F);
  EXPECT_TRUE(t.Find(s->id, "ws", CredentialDigest("key")));
  EXPECT_FALSE(t.Find(s->id, "other", CredentialDigest("key")));
  EXPECT_FALSE(t.Find(s->id, "ws", CredentialDigest("stolen")));
  EXPECT_FALSE(t.Find("nope", "ws", CredentialDigest("key")));
  EXPECT_FALSE(t.Remove(s->id, "ws", CredentialDigest("stolen")));
  EXPECT_TRUE(t.Remove(s->id, "ws", CredentialDigest("key")));
  EXPECT_FALSE(t.Find(s->id, "ws", CredentialDigest("key")));
  EXPECT_NE(CredentialDigest("key"), "key");
  EXPECT_EQ(CredentialDigest(""), "");
}

TEST_F(SessionTableTest, IdleSessionsExpireAndUseKeepsThemAlive) {
  SessionTable t = Table(10);
  auto a = t.Create("ws", "", "2025-11-25");
  auto b = t.Create("ws", "", "2025-11-25");
  now_ += 6min;
  EXPECT_TRUE(t.Find(a->id, "ws", ""));  // used: its idle time starts again
  now_ += 6min;
  EXPECT_TRUE(t.Find(a->id, "ws", ""));
  EXPECT_FALSE(t.Find(b->id, "ws", ""));  // idle 12 minutes
}

TEST_F(SessionTableTest, AFullTableDropsExpiredSessionsThenRefuses) {
  SessionTable t = Table(2);
  auto a = t.Create("ws", "", "v");
  ASSERT_TRUE(t.Create("ws", "", "v").ok());
  auto refused = t.Create("ws", "", "v");
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.status().code(), StatusCode::kUnavailable);
  EXPECT_TRUE(t.Find(a->id, "ws", ""));  // nobody was evicted
  now_ += 11min;
  EXPECT_TRUE(t.Create("ws", "", "v").ok());
  EXPECT_EQ(t.size(), 1u);
}

}  // namespace
}  // namespace engram::mcp
