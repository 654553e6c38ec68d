#include "index/query_dates.h"

#include <algorithm>
#include <array>
#include <cctype>
#include <string>
#include <vector>

#include "common/time_util.h"

namespace engram {

namespace {

constexpr int64_t kMicrosPerDay = 86400LL * 1000 * 1000;

struct Token {
  std::string word;  // lower-cased letters, or digits
  bool number = false;
  size_t digits = 0;
};

// Letters and digit runs; "11th" is the number 11 (the ordinal suffix dropped).
std::vector<Token> Tokenise(std::string_view text) {
  std::vector<Token> out;
  size_t i = 0;
  while (i < text.size()) {
    const unsigned char c = static_cast<unsigned char>(text[i]);
    if (std::isdigit(c)) {
      Token t;
      t.number = true;
      while (i < text.size() && std::isdigit(static_cast<unsigned char>(text[i]))) {
        t.word.push_back(text[i++]);
      }
      t.digits = t.word.size();
      size_t j = i;
      std::string suffix;
      while (j < text.size() && std::isalpha(static_cast<unsigned char>(text[j])) &&
             suffix.size() < 3) {
        suffix.push_back(static_cast<char>(std::tolower(static_cast<unsigned char>(text[j++]))));
      }
      if (suffix == "st" || suffix == "nd" || suffix == "rd" || suffix == "th") i = j;
      out.push_back(std::move(t));
    } else if (std::isalpha(c)) {
      Token t;
      while (i < text.size() && std::isalpha(static_cast<unsigned char>(text[i]))) {
        t.word.push_back(static_cast<char>(std::tolower(static_cast<unsigned char>(text[i++]))));
      }
      out.push_back(std::move(t));
    } else {
      ++i;
    }
  }
  return out;
}

// 1..12 for a month name or its common abbreviation, 0 otherwise.
unsigned Month(const Token& t) {
  static constexpr std::array<std::string_view, 12> kNames = {
      "january", "february", "march",     "april",   "may",      "june",
      "july",    "august",   "september", "october", "november", "december"};
  if (t.number || t.word.size() < 3) return 0;
  for (unsigned m = 0; m < kNames.size(); ++m) {
    if (t.word == kNames[m]) return m + 1;
    if (t.word.size() == 3 && kNames[m].substr(0, 3) == t.word) return m + 1;
  }
  if (t.word == "sept") return 9;
  return 0;
}

int Number(const Token& t) { return t.number && t.digits <= 4 ? std::stoi(t.word) : -1; }
bool IsDay(const Token& t) {
  return t.number && t.digits <= 2 && Number(t) >= 1 && Number(t) <= 31;
}
bool IsYear(const Token& t) {
  return t.number && t.digits == 4 && Number(t) >= 1900 && Number(t) <= 2199;
}

struct Found {
  size_t at;  // token index, for pairing year-less dates with the nearest year
  int year;   // 0 when not given
  unsigned month;
  unsigned day;  // 0 for a whole month
  int days = 1;  // with a day: how many days from it ("the week of 2024-04-29": 7)
};

bool ValidDay(int year, unsigned month, unsigned day) {
  static constexpr std::array<unsigned, 12> kDays = {31, 29, 31, 30, 31, 30,
                                                     31, 31, 30, 31, 30, 31};
  if (day > kDays[month - 1]) return false;
  const bool leap = (year % 4 == 0 && year % 100 != 0) || year % 400 == 0;
  return !(month == 2 && day == 29 && !leap);
}

// Whether "week of " (any case) ends just before `at`: the form relative dates resolve to
// ("last week" -> "in the week of 2024-04-29", core/query_time.h).
bool PrecededByWeekOf(std::string_view text, size_t at) {
  constexpr std::string_view kWeekOf = "week of ";
  if (at < kWeekOf.size()) return false;
  const std::string_view before = text.substr(at - kWeekOf.size(), kWeekOf.size());
  return std::equal(before.begin(), before.end(), kWeekOf.begin(), [](char a, char b) {
    return std::tolower(static_cast<unsigned char>(a)) == b;
  });
}

void FindIso(std::string_view text, std::vector<Found>& found) {
  auto digits = [&](size_t at, size_t n) {
    if (at + n > text.size()) return false;
    for (size_t i = at; i < at + n; ++i) {
      if (!std::isdigit(static_cast<unsigned char>(text[i]))) return false;
    }
    return true;
  };
  for (size_t i = 0; i + 10 <= text.size(); ++i) {
    if ((i > 0 && std::isdigit(static_cast<unsigned char>(text[i - 1]))) || !digits(i, 4) ||
        text[i + 4] != '-' || !digits(i + 5, 2) || text[i + 7] != '-' || !digits(i + 8, 2) ||
        (i + 10 < text.size() && std::isdigit(static_cast<unsigned char>(text[i + 10])))) {
      continue;
    }
    const int y = std::stoi(std::string(text.substr(i, 4)));
    const unsigned m = static_cast<unsigned>(std::stoi(std::string(text.substr(i + 5, 2))));
    const unsigned d = static_cast<unsigned>(std::stoi(std::string(text.substr(i + 8, 2))));
    if (y >= 1900 && y <= 2199 && m >= 1 && m <= 12 && d >= 1 && ValidDay(y, m, d)) {
      // `at` is a character offset here; only order matters.
      found.push_back({i, y, m, d, PrecededByWeekOf(text, i) ? 7 : 1});
    }
    i += 9;
  }
}

}  // namespace

std::optional<TimeRange> ParseQueryDates(std::string_view query, bool whole_years) {
  std::vector<Found> found;
  const std::vector<Token> tokens = Tokenise(query);
  const size_t n = tokens.size();
  for (size_t i = 0; i < n; ++i) {
    if (unsigned m = Month(tokens[i]); m != 0) {
      // Month D[,] [YYYY] | Month YYYY
      if (i + 1 < n && IsDay(tokens[i + 1])) {
        const int year = i + 2 < n && IsYear(tokens[i + 2]) ? Number(tokens[i + 2]) : 0;
        found.push_back({i, year, m, static_cast<unsigned>(Number(tokens[i + 1]))});
        i += year != 0 ? 2 : 1;
      } else if (i + 1 < n && IsYear(tokens[i + 1])) {
        found.push_back({i, Number(tokens[i + 1]), m, 0});
        i += 1;
      }
      continue;
    }
    // D [of] Month [YYYY]
    if (IsDay(tokens[i])) {
      size_t j = i + 1;
      if (j < n && tokens[j].word == "of") ++j;
      if (j < n && Month(tokens[j]) != 0) {
        const int year = j + 1 < n && IsYear(tokens[j + 1]) ? Number(tokens[j + 1]) : 0;
        found.push_back({i, year, Month(tokens[j]), static_cast<unsigned>(Number(tokens[i]))});
        i = year != 0 ? j + 1 : j;
      }
    }
  }
  // Year-less day-month phrases borrow the nearest stated year (the following one first, as in
  // "between August 11 and August 15 2023").
  for (auto& f : found) {
    if (f.year != 0) continue;
    const Found* best = nullptr;
    for (const auto& g : found) {
      if (g.year == 0) continue;
      const size_t dist = g.at > f.at ? g.at - f.at : f.at - g.at;
      const size_t best_dist =
          best == nullptr ? SIZE_MAX : (best->at > f.at ? best->at - f.at : f.at - best->at);
      if (dist < best_dist || (dist == best_dist && g.at > f.at)) best = &g;
    }
    if (best != nullptr) f.year = best->year;
  }
  FindIso(query, found);
  if (whole_years && found.empty()) {
    for (size_t i = 1; i < n; ++i) {
      const std::string& before = tokens[i - 1].word;
      // Not the year of an ISO date ("in 2022-05-07" names a day, found above when valid).
      const bool date_follows = i + 1 < n && tokens[i + 1].number;
      if (IsYear(tokens[i]) && !date_follows &&
          (before == "in" || before == "during" || before == "throughout")) {
        found.push_back({i, Number(tokens[i]), 0, 0});
      }
    }
  }

  std::optional<TimeRange> range;
  for (const auto& f : found) {
    if (f.year == 0 || (f.day != 0 && !ValidDay(f.year, f.month, f.day))) continue;
    int64_t begin, end;
    if (f.month == 0) {  // a whole year
      begin = DaysFromCivil(f.year, 1, 1);
      end = DaysFromCivil(f.year + 1, 1, 1);
    } else if (f.day != 0) {
      begin = DaysFromCivil(f.year, f.month, f.day);
      end = begin + f.days;
    } else {
      begin = DaysFromCivil(f.year, f.month, 1);
      end = f.month == 12 ? DaysFromCivil(f.year + 1, 1, 1) : DaysFromCivil(f.year, f.month + 1, 1);
    }
    TimeRange r{begin * kMicrosPerDay, end * kMicrosPerDay};
    if (!range) {
      range = r;
    } else {
      range->begin_us = std::min(range->begin_us, r.begin_us);
      range->end_us = std::max(range->end_us, r.end_us);
    }
  }
  return range;
}

}  // namespace engram
