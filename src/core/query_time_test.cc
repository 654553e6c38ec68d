#include "core/query_time.h"

#include <gtest/gtest.h>

#include "common/time_util.h"

namespace engram {
namespace {

constexpr int64_t kDay = 86400LL * 1000000;

int64_t Day(int y, unsigned m, unsigned d) { return DaysFromCivil(y, m, d) * kDay; }

// [first, last] whole days.
TimeRange Days(int64_t first, int64_t last) { return {first, last + kDay}; }

void ExpectRange(std::string_view query, std::optional<int64_t> reference, TimeRange want) {
  auto got = QueryTimeRange(query, reference);
  ASSERT_TRUE(got.has_value()) << query;
  EXPECT_EQ(got->begin_us, want.begin_us) << query;
  EXPECT_EQ(got->end_us, want.end_us) << query;
}

TEST(QueryTimeTest, RelativeExpressionsResolveAgainstTheReferenceDate) {
  const int64_t saturday = Day(2023, 4, 22) + 8 * 3600LL * 1000000;  // Sat 2023-04-22 08:00
  ExpectRange("Who did I go with to the music event last Saturday?", saturday,
              Days(Day(2023, 4, 15), Day(2023, 4, 15)));
  ExpectRange("What kitchen appliance did I buy 10 days ago?", saturday,
              Days(Day(2023, 4, 12), Day(2023, 4, 12)));
  ExpectRange("What did I cook yesterday?", saturday, Days(Day(2023, 4, 21), Day(2023, 4, 21)));
  // A week is the whole week (Monday to Sunday) it falls in.
  ExpectRange("Which book did I finish a week ago?", saturday,
              Days(Day(2023, 4, 10), Day(2023, 4, 16)));
  ExpectRange("What charity event did I join last month?", saturday,
              Days(Day(2023, 3, 1), Day(2023, 3, 31)));
  // Absolute dates are read as without a reference.
  ExpectRange("What happened on 7 May 2022?", saturday, Days(Day(2022, 5, 7), Day(2022, 5, 7)));
}

// "last year" resolves to a year: a period for the versions of a memory, not a date prior.
TEST(QueryTimeTest, WholeYearsWhenAsked) {
  const int64_t reference = Day(2023, 2, 1);
  EXPECT_FALSE(QueryTimeRange("Where did I live last year?", reference).has_value());
  auto got = QueryTimeRange("Where did I live last year?", reference, /*whole_years=*/true);
  ASSERT_TRUE(got.has_value());
  EXPECT_EQ(got->begin_us, Day(2022, 1, 1));
  EXPECT_EQ(got->end_us, Day(2023, 1, 1));
  got = QueryTimeRange("Where did I live in 2021?", std::nullopt, /*whole_years=*/true);
  ASSERT_TRUE(got.has_value());
  EXPECT_EQ(got->begin_us, Day(2021, 1, 1));
}

TEST(QueryTimeTest, WithoutAReferenceOnlyAbsoluteDatesCount) {
  EXPECT_FALSE(QueryTimeRange("What did I do last Saturday?", std::nullopt).has_value());
  EXPECT_FALSE(QueryTimeRange("What did I buy 10 days ago?", std::nullopt).has_value());
  ExpectRange("What did I do in June 2022?", std::nullopt, Days(Day(2022, 6, 1), Day(2022, 6, 30)));
}

TEST(QueryTimeTest, QuestionsAboutDurationsNameNoDate) {
  const int64_t reference = Day(2023, 4, 20);
  EXPECT_FALSE(QueryTimeRange("How many days ago did I meet Emma?", reference).has_value());
  EXPECT_FALSE(
      QueryTimeRange("How many months have passed since I last visited a museum?", reference)
          .has_value());
}

}  // namespace
}  // namespace engram
