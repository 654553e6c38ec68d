// The time a search query is about: the calendar dates it names (index/query_dates.h), and, when
// the search carries a reference date ("now" for the asker), its relative expressions resolved
// against it first ("last Saturday", "a week ago", "two months ago", "yesterday", "in May"), with
// the rule-based extractor's resolver (rule_extract::ResolveRelativeDates). The range feeds the
// date prior, which ranks turns and memories from around that time higher.
//
// Without a reference date, relative expressions stay unresolved: a server's clock says nothing
// about when the asker's "last week" was (a conversation replayed a year later).
//
// Thread-safety: pure function.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

#include "index/query_dates.h"

namespace engram {

// The range of the dates `query` names, its relative expressions resolved against
// `reference_us` (microseconds since the epoch, UTC) when set; nullopt when it names none.
// `whole_years`: as ParseQueryDates's ("in 2022", "last year" with a reference).
std::optional<TimeRange> QueryTimeRange(std::string_view query, std::optional<int64_t> reference_us,
                                        bool whole_years = false);

}  // namespace engram
