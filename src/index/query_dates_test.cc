#include "index/query_dates.h"

#include <gtest/gtest.h>

#include <string>

#include "common/time_util.h"

namespace engram {
namespace {

constexpr int64_t kDay = 86400LL * 1000 * 1000;

int64_t Day(int y, unsigned m, unsigned d) { return DaysFromCivil(y, m, d) * kDay; }

void ExpectRange(const std::string& query, int64_t begin, int64_t end) {
  auto r = ParseQueryDates(query);
  ASSERT_TRUE(r.has_value()) << query;
  EXPECT_EQ(r->begin_us, begin) << query;
  EXPECT_EQ(r->end_us, end) << query;
}

TEST(QueryDatesTest, DayMonthYearForms) {
  ExpectRange("What did they discuss on 11 December, 2023?", Day(2023, 12, 11), Day(2023, 12, 12));
  ExpectRange("what happened on December 11, 2023", Day(2023, 12, 11), Day(2023, 12, 12));
  ExpectRange("the 3rd of march 2021 trip", Day(2021, 3, 3), Day(2021, 3, 4));
  ExpectRange("Dec 1st 2022", Day(2022, 12, 1), Day(2022, 12, 2));
  ExpectRange("logs from 2024-02-29 please", Day(2024, 2, 29), Day(2024, 3, 1));
  ExpectRange("what did I read in the Week of 2024-04-29", Day(2024, 4, 29), Day(2024, 5, 6));
}

TEST(QueryDatesTest, MonthYearCoversTheMonth) {
  ExpectRange("Who did Nate invite to his party in June 2022?", Day(2022, 6, 1), Day(2022, 7, 1));
  ExpectRange("in December 2023", Day(2023, 12, 1), Day(2024, 1, 1));
}

TEST(QueryDatesTest, RangesAndBorrowedYears) {
  ExpectRange("Where was John between August 11 and August 15 2023?", Day(2023, 8, 11),
              Day(2023, 8, 16));
  ExpectRange("from 2 May 2022 to 9 June 2023", Day(2022, 5, 2), Day(2023, 6, 10));
}

TEST(QueryDatesTest, NothingToAnchor) {
  EXPECT_FALSE(ParseQueryDates("What may Caroline do next?").has_value());
  EXPECT_FALSE(ParseQueryDates("What happened on August 11?").has_value());  // no year
  EXPECT_FALSE(ParseQueryDates("call me in 2023").has_value());  // a bare year is too broad
  EXPECT_FALSE(ParseQueryDates("February 30, 2023").has_value());
  EXPECT_FALSE(ParseQueryDates("2023-13-01 and 2023-02-29").has_value());
  EXPECT_FALSE(ParseQueryDates("").has_value());
  EXPECT_FALSE(ParseQueryDates("99999999999999999999 march 123456").has_value());
}

}  // namespace
}  // namespace engram

namespace engram {
namespace {

TEST(QueryDatesTest, WholeYearsOnlyWhenAskedAndNothingFiner) {
  const int64_t y2022 = *ParseIsoToMicros("2022-01-01T00:00:00Z");
  const int64_t y2023 = *ParseIsoToMicros("2023-01-01T00:00:00Z");
  const int64_t y2024 = *ParseIsoToMicros("2024-01-01T00:00:00Z");
  auto range = ParseQueryDates("Where did she live in 2022?", /*whole_years=*/true);
  ASSERT_TRUE(range);
  EXPECT_EQ(range->begin_us, y2022);
  EXPECT_EQ(range->end_us, y2023);
  range = ParseQueryDates("during 2022 and throughout 2023", true);
  ASSERT_TRUE(range);
  EXPECT_EQ(range->begin_us, y2022);
  EXPECT_EQ(range->end_us, y2024);
  EXPECT_FALSE(ParseQueryDates("Where did she live in 2022?"));  // not for the date prior
  EXPECT_FALSE(ParseQueryDates("the 2022 budget", true));        // no preposition
  EXPECT_FALSE(ParseQueryDates("in 1850", true));                // outside the years read
  // A finer date wins: the month, not the year.
  range = ParseQueryDates("in June 2022 or in 2023", true);
  ASSERT_TRUE(range);
  EXPECT_EQ(range->begin_us, *ParseIsoToMicros("2022-06-01T00:00:00Z"));
  EXPECT_EQ(range->end_us, *ParseIsoToMicros("2022-07-01T00:00:00Z"));
  range = ParseQueryDates("in 2022-05-07", true);
  ASSERT_TRUE(range);
  EXPECT_EQ(range->begin_us, *ParseIsoToMicros("2022-05-07T00:00:00Z"));
}

}  // namespace
}  // namespace engram
