#include "core/query_time.h"

#include <string>

#include "extract/rule_based_extractor.h"

namespace engram {

std::optional<TimeRange> QueryTimeRange(std::string_view query, std::optional<int64_t> reference_us,
                                        bool whole_years) {
  if (!reference_us || *reference_us <= 0) return ParseQueryDates(query, whole_years);
  // A question looks back: a bare weekday or month name is the last one before the reference.
  const std::string resolved =
      rule_extract::ResolveRelativeDates(query, *reference_us, /*past=*/true);
  return ParseQueryDates(resolved, whole_years);
}

}  // namespace engram
