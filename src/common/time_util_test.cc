#include "common/time_util.h"

#include <gtest/gtest.h>

#include <climits>
#include <cstdio>
#include <random>
#include <string>
#include <utility>
#include <vector>

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

// printf's rendering of both formats, for any instant.
std::pair<std::string, std::string> PrintfForms(int64_t micros) {
  const int64_t secs = micros >= 0 ? micros / 1000000 : -((-micros + 999999) / 1000000);
  const int64_t us = micros - secs * 1000000;
  const int64_t days = secs >= 0 ? secs / 86400 : -((-secs + 86399) / 86400);
  const int64_t rem = secs - days * 86400;
  const Civil c = CivilFromDays(days);
  static const char* kDays[] = {"Thu", "Fri", "Sat", "Sun", "Mon", "Tue", "Wed"};
  const int hh = static_cast<int>(rem / 3600), mm = static_cast<int>(rem % 3600 / 60);
  char iso[64], human[64];
  std::snprintf(iso, sizeof iso, "%04lld-%02u-%02uT%02d:%02d:%02d.%06lldZ",
                static_cast<long long>(c.y), c.m, c.d, hh, mm, static_cast<int>(rem % 60),
                static_cast<long long>(us));
  std::snprintf(human, sizeof human, "%04lld-%02u-%02u (%s) %02d:%02d UTC",
                static_cast<long long>(c.y), c.m, c.d, kDays[((days % 7) + 7) % 7], hh, mm);
  return {iso, human};
}

TEST(TimeUtilTest, FormatsEveryInstantAsPrintfDoes) {
  // Years 0-9999 are written digit by digit, others through snprintf: both give printf's text.
  std::mt19937_64 rng(7);
  const int64_t year0 = DaysFromCivil(0, 1, 1) * 86400LL * 1000000;
  const int64_t year10000 = DaysFromCivil(10000, 1, 1) * 86400LL * 1000000;
  std::vector<int64_t> instants = {0,
                                   -1,
                                   1,
                                   year0,
                                   year0 - 1,
                                   year10000,
                                   year10000 - 1,
                                   1704067200000000LL,
                                   INT64_MAX / 2,
                                   INT64_MIN / 2};
  for (int i = 0; i < 20000; ++i) {
    instants.push_back(year0 +
                       static_cast<int64_t>(rng() % static_cast<uint64_t>(year10000 - year0)));
    instants.push_back(static_cast<int64_t>(rng()) / 4);
  }
  for (const int64_t t : instants) {
    const auto [iso, human] = PrintfForms(t);
    ASSERT_EQ(FormatIsoMicros(t), iso) << t;
    ASSERT_EQ(FormatHumanMinute(t), human) << t;
  }
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
