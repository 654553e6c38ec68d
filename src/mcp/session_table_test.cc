#include "mcp/session_table.h"

#include <gtest/gtest.h>

#include <vector>

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
  auto s = t.Create("ws", CredentialDigest("key"), "10.0.0.1", "2025-11-25");
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
  auto a = t.Create("ws", "", "10.0.0.1", "2025-11-25");
  auto b = t.Create("ws", "", "10.0.0.1", "2025-11-25");
  now_ += 6min;
  EXPECT_TRUE(t.Find(a->id, "ws", ""));  // used: its idle time starts again
  now_ += 6min;
  EXPECT_TRUE(t.Find(a->id, "ws", ""));
  EXPECT_FALSE(t.Find(b->id, "ws", ""));  // idle 12 minutes
}

TEST_F(SessionTableTest, AFullTableDropsExpiredSessionsThenRefuses) {
  SessionTable t = Table(2);
  auto a = t.Create("ws", "", "10.0.0.1", "v");
  ASSERT_TRUE(t.Create("ws", "", "10.0.0.1", "v").ok());
  auto refused = t.Create("ws", "", "10.0.0.1", "v");
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.status().code(), StatusCode::kUnavailable);
  EXPECT_TRUE(t.Find(a->id, "ws", ""));  // nobody was evicted
  now_ += 11min;
  EXPECT_TRUE(t.Create("ws", "", "10.0.0.1", "v").ok());
  EXPECT_EQ(t.size(), 1u);
}

TEST_F(SessionTableTest, AKeyAtItsQuotaEndsItsOwnLeastRecentlyUsedSession) {
  SessionTable t({.max_sessions = 10, .max_per_credential = 3, .idle_timeout = 10min},
                 [this] { return now_; });
  const std::string greedy = CredentialDigest("greedy");
  const std::string other = CredentialDigest("other");
  auto bystander = t.Create("ws", other, "10.0.0.2", "v");
  std::vector<Session> own;
  for (int i = 0; i < 3; ++i) {
    now_ += 1s;
    own.push_back(*t.Create("ws", greedy, "10.0.0.1", "v"));
  }
  now_ += 1s;
  EXPECT_TRUE(t.Find(own[0].id, "ws", greedy));  // used: own[1] is now the least recent
  for (int i = 0; i < 100; ++i) {
    now_ += 1s;
    ASSERT_TRUE(t.Create("ws", greedy, "10.0.0.1", "v").ok());
  }
  EXPECT_FALSE(t.Find(own[1].id, "ws", greedy));
  EXPECT_EQ(t.size(), 4u);  // the greedy key's three and the bystander's
  EXPECT_TRUE(t.Find(bystander->id, "ws", other));
  EXPECT_TRUE(t.Create("ws", other, "10.0.0.2", "v").ok());
}

TEST_F(SessionTableTest, AClientAddressAtItsQuotaEndsItsOwnLeastRecentlyUsedSession) {
  // Development mode: no keys, so the address is what tells clients apart.
  SessionTable t({.max_sessions = 10, .max_per_client = 2, .idle_timeout = 10min},
                 [this] { return now_; });
  auto neighbour = t.Create("ws", "", "10.0.0.9", "v");
  auto first = t.Create("ws", "", "10.0.0.1", "v");
  now_ += 1s;
  auto second = t.Create("ws", "", "10.0.0.1", "v");
  now_ += 1s;
  for (int i = 0; i < 20; ++i) ASSERT_TRUE(t.Create("ws", "", "10.0.0.1", "v").ok());
  EXPECT_FALSE(t.Find(first->id, "ws", ""));
  EXPECT_FALSE(t.Find(second->id, "ws", ""));
  EXPECT_TRUE(t.Find(neighbour->id, "ws", ""));
  EXPECT_EQ(t.size(), 3u);
}

TEST_F(SessionTableTest, KeysSharingAnAddressNeverEndEachOthersSessions) {
  // A proxy: every key arrives from one address.
  SessionTable t({.max_sessions = 100, .max_per_client = 3, .idle_timeout = 10min},
                 [this] { return now_; });
  const std::string a = CredentialDigest("a");
  const std::string b = CredentialDigest("b");
  auto b_session = t.Create("ws", b, "10.0.0.1", "v");
  for (int i = 0; i < 2; ++i) {
    now_ += 1s;
    ASSERT_TRUE(t.Create("ws", a, "10.0.0.1", "v").ok());
  }
  // The address is at its quota: a's own oldest session makes room, b's stays.
  for (int i = 0; i < 10; ++i) {
    now_ += 1s;
    ASSERT_TRUE(t.Create("ws", a, "10.0.0.1", "v").ok());
  }
  EXPECT_TRUE(t.Find(b_session->id, "ws", b));
  // A key with no session at a full address is refused rather than ending another key's.
  auto refused = t.Create("ws", CredentialDigest("c"), "10.0.0.1", "v");
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.status().code(), StatusCode::kUnavailable);
  EXPECT_TRUE(t.Find(b_session->id, "ws", b));
}

}  // namespace
}  // namespace engram::mcp
