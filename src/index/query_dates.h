// Calendar dates named in a search query ("on 11 December, 2023", "in June 2022",
// "between August 11 and August 15 2023", "2023-05-07"), for ranking turns from around that
// time higher.
//
// Recognised forms (English month names or three-letter abbreviations, any case; ordinal
// suffixes allowed): "D Month YYYY", "D(th) of Month YYYY", "Month D, YYYY", "Month YYYY",
// "YYYY-MM-DD" ("week of YYYY-MM-DD": the seven days from it). A day and month without a year
// ("August 11") take the year of the nearest dated phrase in the same query, and are ignored when
// there is none. Relative phrases ("last May") are not resolved here: core/query_time.h resolves
// them against a search's reference date first.
//
// Thread-safety: pure function.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

namespace engram {

// [begin_us, end_us): microseconds since the epoch, UTC.
struct TimeRange {
  int64_t begin_us = 0;
  int64_t end_us = 0;
};

// The smallest range covering every date the query names (a day covers 24 h, a month the whole
// month); nullopt when it names none. With `whole_years`, a query naming no day or month yields
// the years it names after "in", "during" or "throughout" ("where did she live in 2022?"): the
// period a question about a past state asks about. Memory searches ask for them; the
// Leaderboard's, whose conversations mostly share their year, does not.
std::optional<TimeRange> ParseQueryDates(std::string_view query, bool whole_years = false);

}  // namespace engram
