#include "common/utf8.h"

#include <gtest/gtest.h>

#include <string>

namespace engram {
namespace {

TEST(Utf8Test, FloorNeverCutsInsideASequence) {
  const std::string s = "a\xC3\xA9\xE2\x82\xAC";  // "a", "é" (2 bytes), "€" (3 bytes)
  EXPECT_EQ(Utf8Floor(s, 0), 0u);
  EXPECT_EQ(Utf8Floor(s, 1), 1u);
  EXPECT_EQ(Utf8Floor(s, 2), 1u);  // inside "é"
  EXPECT_EQ(Utf8Floor(s, 3), 3u);
  EXPECT_EQ(Utf8Floor(s, 4), 3u);  // inside "€"
  EXPECT_EQ(Utf8Floor(s, 5), 3u);
  EXPECT_EQ(Utf8Floor(s, 6), 6u);
  EXPECT_EQ(Utf8Floor(s, 100), 6u);
  for (size_t limit = 0; limit <= s.size(); ++limit) {
    EXPECT_TRUE(IsValidUtf8(std::string_view(s).substr(0, Utf8Floor(s, limit)))) << limit;
  }
}

}  // namespace
}  // namespace engram
