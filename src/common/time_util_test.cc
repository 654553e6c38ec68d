#include "common/time_util.h"

#include <gtest/gtest.h>

namespace engram {
namespace {

TEST(TimeUtilTest, FormatsIsoWithMicros) {
  EXPECT_EQ(FormatIsoMicros(0), "1970-01-01T00:00:00.000000Z");
  EXPECT_EQ(FormatIsoMicros(1704067200000000LL + 482047), "2024-01-01T00:00:00.482047Z");
  // Milliseconds as JavaScript's toISOString writes them: the earlier millisecond, also before
  // the epoch.
  EXPECT_EQ(FormatIsoMillis(0), "1970-01-01T00:00:00.000Z");
  EXPECT_EQ(FormatIsoMillis(1704067200000000LL + 482999), "2024-01-01T00:00:00.482Z");
  EXPECT_EQ(FormatIsoMillis(-1), "1969-12-31T23:59:59.999Z");
  EXPECT_EQ(FormatIsoMillis(-1000), "1969-12-31T23:59:59.999Z");
  EXPECT_EQ(FormatIsoMillis(-1001), "1969-12-31T23:59:59.998Z");
}

TEST(TimeUtilTest, FormatsHumanMinute) {
  // 2023-05-08 13:56 UTC was a Monday.
  auto t = ParseIsoToMicros("2023-05-08T13:56:00Z");
  ASSERT_TRUE(t.has_value());
  EXPECT_EQ(FormatHumanMinute(*t), "2023-05-08 (Mon) 13:56 UTC");
}

TEST(TimeUtilTest, ParsesVariants) {
  EXPECT_EQ(ParseIsoToMicros("2024-01-01"), 1704067200000000LL);
  EXPECT_EQ(ParseIsoToMicros("2024-01-01T00:00:00Z"), 1704067200000000LL);
  EXPECT_EQ(ParseIsoToMicros("2024-01-01 02:00:00+02:00"), 1704067200000000LL);
  EXPECT_EQ(ParseIsoToMicros("2024-01-01T00:00:00.5Z"), 1704067200500000LL);
}

TEST(TimeUtilTest, RejectsGarbage) {
  EXPECT_FALSE(ParseIsoToMicros("").has_value());
  EXPECT_FALSE(ParseIsoToMicros("2024-13-01").has_value());
  EXPECT_FALSE(ParseIsoToMicros("2023-02-29").has_value());
  EXPECT_FALSE(ParseIsoToMicros("2024-01-01T25:00").has_value());
  EXPECT_FALSE(ParseIsoToMicros("2024-01-01Tfoo").has_value());
  EXPECT_FALSE(ParseIsoToMicros("yesterday").has_value());
}

}  // namespace
}  // namespace engram
