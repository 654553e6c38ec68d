// Time formatting and parsing helpers. All times are UTC.
// Thread-safety: pure functions.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace engram {

// Microseconds since the Unix epoch, from the system clock.
int64_t NowMicros();

// "2026-06-02T08:39:21.482047Z"
std::string FormatIsoMicros(int64_t micros);

// "2026-06-02T08:39:21.482Z": milliseconds, as JavaScript's Date.prototype.toISOString writes it
// (truncated toward the earlier millisecond, as a Date holds whole milliseconds).
std::string FormatIsoMillis(int64_t micros);

// "2023-05-08 (Mon) 13:56 UTC" – the form shown to answering models next to a memory's text.
std::string FormatHumanMinute(int64_t micros);

// Parses ISO 8601 / RFC 3339 date or date-time ("2024-01-02", "2024-01-02T03:04:05Z",
// "2024-01-02T03:04:05.123+02:00", "2024-01-02 03:04:05") into micros since epoch (UTC).
std::optional<int64_t> ParseIsoToMicros(std::string_view text);

// Days since epoch for a proleptic Gregorian date (Howard Hinnant's algorithm).
int64_t DaysFromCivil(int64_t y, unsigned m, unsigned d);

// The date of a day number (days since epoch); the inverse of DaysFromCivil.
struct Civil {
  int64_t y;
  unsigned m, d;
};
Civil CivilFromDays(int64_t days);

}  // namespace engram
