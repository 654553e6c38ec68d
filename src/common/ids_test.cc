// Ids: canonical UUID form, the version and variant bits, uniqueness, and the time order of v7.
#include "common/ids.h"

#include <gtest/gtest.h>

#include <chrono>
#include <set>
#include <string>
#include <thread>

namespace engram {
namespace {

bool Canonical(const std::string& u) {
  if (u.size() != 36) return false;
  for (size_t i = 0; i < u.size(); ++i) {
    const bool dash = i == 8 || i == 13 || i == 18 || i == 23;
    if (dash != (u[i] == '-')) return false;
    if (!dash && !((u[i] >= '0' && u[i] <= '9') || (u[i] >= 'a' && u[i] <= 'f'))) return false;
  }
  return true;
}

TEST(IdsTest, RandomUuidIsVersion4) {
  std::set<std::string> seen;
  for (int i = 0; i < 1000; ++i) {
    const std::string u = NewUuid();
    ASSERT_TRUE(Canonical(u)) << u;
    EXPECT_EQ(u[14], '4') << u;
    EXPECT_NE(std::string("89ab").find(u[19]), std::string::npos) << u;
    seen.insert(u);
  }
  EXPECT_EQ(seen.size(), 1000u);
}

TEST(IdsTest, TimeOrderedUuidIsVersion7AndSortsByTime) {
  std::set<std::string> seen;
  std::string previous;
  for (int i = 0; i < 50; ++i) {
    const std::string u = NewTimeOrderedUuid();
    ASSERT_TRUE(Canonical(u)) << u;
    EXPECT_EQ(u[14], '7') << u;
    EXPECT_NE(std::string("89ab").find(u[19]), std::string::npos) << u;
    if (!previous.empty()) {
      EXPECT_LT(previous, u);  // 2 ms apart: later sorts later
    }
    previous = u;
    seen.insert(u);
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  EXPECT_EQ(seen.size(), 50u);
  // The first 48 bits are the Unix time in milliseconds.
  const auto now_ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                          std::chrono::system_clock::now().time_since_epoch())
                          .count();
  const std::string u = NewTimeOrderedUuid();
  const long long ms = std::stoll(u.substr(0, 8) + u.substr(9, 4), nullptr, 16);
  EXPECT_LE(std::llabs(ms - now_ms), 1000);
  // Many in a row (most within one microsecond or millisecond) are still unique.
  for (int i = 0; i < 10000; ++i) seen.insert(NewTimeOrderedUuid());
  EXPECT_EQ(seen.size(), 10050u);
}

TEST(IdsTest, NewIdIsPrefixAndTimeOrderedUuid) {
  const std::string id = NewId("me");
  ASSERT_EQ(id.rfind("me-", 0), 0u);
  EXPECT_TRUE(Canonical(id.substr(3)));
  EXPECT_EQ(id[3 + 14], '7');
}

}  // namespace
}  // namespace engram
