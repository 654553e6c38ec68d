// Dates for the rule-based extractor: the date words of a sentence and ResolveRelativeDates,
// which makes relative dates absolute against the message's time.
#include <array>
#include <cstdint>
#include <cstdio>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/time_util.h"
#include "extract/rule_based_extractor.h"
#include "extract/rule_based_internal.h"

namespace engram {
namespace rule_extract_internal {
namespace {

// ---------------------------------------------------------------------------------------------
// Dates.

constexpr std::array<std::string_view, 12> kMonths = {
    "January", "February", "March",     "April",   "May",      "June",
    "July",    "August",   "September", "October", "November", "December"};
constexpr std::array<std::string_view, 7> kWeekdays = {
    "monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday"};

int Weekday(int64_t days) { return static_cast<int>(((days + 3) % 7 + 7) % 7); }  // Monday = 0

std::string FormatDay(int64_t days) {
  const Civil c = CivilFromDays(days);
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%04lld-%02u-%02u", static_cast<long long>(c.y), c.m, c.d);
  return buf;
}

std::string FormatMonth(int64_t y, int m) {  // m: 1..12
  return std::string(kMonths[m - 1]) + " " + std::to_string(y);
}

// Month `m` (1..12) of year `y` shifted by `delta` months.
std::string ShiftMonth(int64_t y, int m, int64_t delta) {
  int64_t idx = y * 12 + (m - 1) + delta;
  const int64_t ny = idx >= 0 ? idx / 12 : (idx - 11) / 12;
  return FormatMonth(ny, static_cast<int>(idx - ny * 12) + 1);
}

std::string WeekOf(int64_t days) { return "in the week of " + FormatDay(days - Weekday(days)); }

std::optional<int> SmallNumber(std::string_view w) {
  static const std::array<std::string_view, 13> kNumbers = {
      "zero",  "one",   "two",  "three", "four",   "five",  "six",
      "seven", "eight", "nine", "ten",   "eleven", "twelve"};
  if (w == "a" || w == "an") return 1;
  for (size_t i = 0; i < kNumbers.size(); ++i) {
    if (w == kNumbers[i]) return static_cast<int>(i);
  }
  if (AllDigits(w) && w.size() <= 3) return std::stoi(std::string(w));
  return std::nullopt;
}

}  // namespace

int MonthIndex(std::string_view core) {  // 1..12, or 0; needs the capital ("may" is a verb)
  for (size_t i = 0; i < kMonths.size(); ++i) {
    if (core == kMonths[i]) return static_cast<int>(i) + 1;
  }
  return 0;
}

int WeekdayIndex(std::string_view lower) {  // Monday = 0; -1 for anything else ("mondays")
  for (size_t i = 0; i < kWeekdays.size(); ++i) {
    if (lower == kWeekdays[i]) return static_cast<int>(i);
  }
  return -1;
}

std::string_view Unit(std::string_view w) {
  for (std::string_view u : {"day", "week", "month", "year"}) {
    if (w == u || (w.size() == u.size() + 1 && w.substr(0, u.size()) == u && w.back() == 's')) {
      return u;
    }
  }
  return {};
}

}  // namespace rule_extract_internal

using namespace rule_extract_internal;  // NOLINT: the extractor's own parts, private to its files

namespace rule_extract {

std::string ResolveRelativeDates(std::string_view text, int64_t time_us, bool past) {
  const std::vector<std::string_view> raw = SplitWords(text);
  std::vector<std::string> out;
  if (time_us <= 0) {
    for (std::string_view w : raw) out.emplace_back(w);
    return Join(out);
  }
  std::vector<Word> w;
  for (std::string_view r : raw) w.push_back(SplitPunct(r));
  const int64_t today = (time_us >= 0 ? time_us : time_us - 86'399'999'999) / 86'400'000'000;
  const Civil now = CivilFromDays(today);
  const int wd = Weekday(today);
  auto lw = [&](size_t i) -> std::string_view {
    return i < w.size() ? std::string_view(w[i].lower) : std::string_view();
  };
  // True when words i..i+n-1 are separated only by spaces (no "," or "." between them).
  auto joined = [&](size_t i, size_t n) {
    if (i + n > w.size()) return false;
    for (size_t k = i; k + 1 < i + n; ++k) {
      if (!w[k].trail.empty() || !w[k + 1].lead.empty()) return false;
    }
    return true;
  };
  auto weekday_date = [&](int target, int direction) -> int64_t {
    // direction -1: most recent strictly before today, +1: first strictly after, 0: this week.
    if (direction < 0) return today - ((wd - target + 6) % 7 + 1);
    if (direction > 0) return today + ((target - wd + 6) % 7 + 1);
    return today - wd + target;
  };
  // `k` days / weeks / months / years from today.
  auto shift = [&](std::string_view unit, int64_t k) -> std::string {
    if (unit == "day") return "on " + FormatDay(today + k);
    if (unit == "week") return WeekOf(today + 7 * k);
    if (unit == "month") return "in " + ShiftMonth(now.y, static_cast<int>(now.m), k);
    return "in " + std::to_string(now.y + k);
  };
  for (size_t i = 0; i < w.size();) {
    std::string rep;
    size_t n = 0;
    const std::string_view a = lw(i), b = lw(i + 1), c = lw(i + 2);
    if (a == "yesterday") {
      rep = "on " + FormatDay(today - 1), n = 1;
    } else if (a == "today" || a == "tonight") {
      rep = "on " + FormatDay(today), n = 1;
    } else if (a == "tomorrow") {
      rep = "on " + FormatDay(today + 1), n = 1;
    } else if (a == "last" && b == "night" && joined(i, 2)) {
      rep = "on " + FormatDay(today - 1), n = 2;
    } else if (a == "this" && (b == "morning" || b == "afternoon" || b == "evening") &&
               joined(i, 2)) {
      rep = "on " + FormatDay(today), n = 2;
    } else if ((a == "last" || a == "next" || a == "this") && !Unit(b).empty() && b.back() != 's' &&
               joined(i, 2)) {
      // "last day" / "next day" are not dates.
      if (Unit(b) != "day") rep = shift(Unit(b), a == "last" ? -1 : a == "next" ? 1 : 0), n = 2;
    } else if ((a == "last" || a == "next" || a == "this") && b == "weekend" && joined(i, 2)) {
      const int dir = a == "last" ? -1 : a == "next" ? 1 : 0;
      rep = "on the weekend of " + FormatDay(today - wd + 5 + 7 * dir), n = 2;
    } else if ((a == "last" || a == "next" || a == "this") && WeekdayIndex(b) >= 0 &&
               joined(i, 2)) {
      const int dir = a == "last" ? -1 : a == "next" ? 1 : 0;
      int64_t d = weekday_date(WeekdayIndex(b), dir);
      if (dir == 0 && past && d > today) d -= 7;
      if (dir == 0 && !past && d < today) d += 7;
      rep = "on " + FormatDay(d), n = 2;
    } else if (SmallNumber(a) && !Unit(b).empty() && c == "ago" && joined(i, 3) && a != "an" &&
               (a != "a" || b.back() != 's')) {
      rep = shift(Unit(b), -*SmallNumber(a)), n = 3;
    } else if (a == "in" && SmallNumber(b) && !Unit(c).empty() && joined(i, 3)) {
      rep = shift(Unit(c), *SmallNumber(b)), n = 3;
    } else if (WeekdayIndex(a) >= 0 && !(i > 0 && (lw(i - 1) == "every" || lw(i - 1) == "each"))) {
      rep = "on " + FormatDay(weekday_date(WeekdayIndex(a), past ? -1 : 1)), n = 1;
    } else if (const int m = MonthIndex(w[i].core); m > 0) {
      n = 1;
      const bool year_follows = AllDigits(b) && b.size() == 4;
      std::string_view day = b;
      while (!day.empty() && !IsDigit(day.back())) day.remove_suffix(1);
      const bool day_follows =
          AllDigits(day) && day.size() <= 2 && joined(i, 2) &&
          (day.size() == b.size() || b.substr(day.size()) == "st" || b.substr(day.size()) == "nd" ||
           b.substr(day.size()) == "rd" || b.substr(day.size()) == "th");
      const std::string_view prev = i > 0 ? lw(i - 1) : std::string_view();
      const int dir = prev == "last" ? -1 : prev == "next" ? 1 : past ? -1 : 1;
      if (year_follows || (day_follows && AllDigits(c) && c.size() == 4)) {
        n = 0;  // already absolute
      } else if (day_follows) {
        const int dd = std::stoi(std::string(day));
        int64_t y = now.y;
        const bool after = static_cast<unsigned>(m) > now.m ||
                           (static_cast<unsigned>(m) == now.m && static_cast<unsigned>(dd) > now.d);
        const bool before =
            static_cast<unsigned>(m) < now.m ||
            (static_cast<unsigned>(m) == now.m && static_cast<unsigned>(dd) < now.d);
        if (dir < 0 && after) --y;
        if (dir > 0 && before) ++y;
        rep = "on " + FormatDay(DaysFromCivil(y, m, dd)), n = 2;
      } else {
        int64_t y = now.y;
        if (dir < 0 && static_cast<unsigned>(m) > now.m) --y;
        if (dir > 0 && static_cast<unsigned>(m) < now.m) ++y;
        rep = "in " + FormatMonth(y, m);
      }
      // "last March" / "next March": the qualifier is part of the expression.
      if (n > 0 && (prev == "last" || prev == "next") && !out.empty()) out.pop_back();
    }
    if (n == 0) {
      out.push_back(w[i].lead + w[i].core + w[i].trail);
      ++i;
      continue;
    }
    // A preposition already in the text replaces ours: "since yesterday" -> "since 2024-05-07".
    static const WordSet kPrepositions =
        Words("on in since until till by from before after during of around for as to through");
    if (!out.empty() && w[i].lead.empty()) {
      const std::string prev = Lower(SplitPunct(out.back()).core);
      if (kPrepositions.count(prev) > 0 && SplitPunct(out.back()).trail.empty()) {
        const size_t space = rep.find(' ');
        const std::string_view first = std::string_view(rep).substr(0, space);
        if (first == "on" || first == "in") {
          rep = rep.substr(space + 1);
        }
      }
    }
    out.push_back(w[i].lead + rep + w[i + n - 1].trail);
    i += n;
  }
  return Join(out);
}

}  // namespace rule_extract

}  // namespace engram
