#include "common/time_util.h"

#include <chrono>
#include <cstdio>
#include <cstring>

namespace engram {

int64_t NowMicros() {
  return std::chrono::duration_cast<std::chrono::microseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

int64_t DaysFromCivil(int64_t y, unsigned m, unsigned d) {
  y -= m <= 2;
  const int64_t era = (y >= 0 ? y : y - 399) / 400;
  const unsigned yoe = static_cast<unsigned>(y - era * 400);
  const unsigned doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
  const unsigned doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
  return era * 146097 + static_cast<int64_t>(doe) - 719468;
}

Civil CivilFromDays(int64_t z) {
  z += 719468;
  const int64_t era = (z >= 0 ? z : z - 146096) / 146097;
  const unsigned doe = static_cast<unsigned>(z - era * 146097);
  const unsigned yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
  const int64_t y = static_cast<int64_t>(yoe) + era * 400;
  const unsigned doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
  const unsigned mp = (5 * doy + 2) / 153;
  const unsigned d = doy - (153 * mp + 2) / 5 + 1;
  const unsigned m = mp < 10 ? mp + 3 : mp - 9;
  return {y + (m <= 2), m, d};
}

namespace {

struct Split {
  Civil date;
  int hh, mm, ss;
  int64_t us;
};

Split SplitMicros(int64_t micros) {
  int64_t secs = micros >= 0 ? micros / 1000000 : -((-micros + 999999) / 1000000);
  int64_t us = micros - secs * 1000000;
  int64_t days = secs >= 0 ? secs / 86400 : -((-secs + 86399) / 86400);
  int64_t rem = secs - days * 86400;
  return {CivilFromDays(days), static_cast<int>(rem / 3600), static_cast<int>((rem % 3600) / 60),
          static_cast<int>(rem % 60), us};
}

bool ReadInt(std::string_view s, size_t& pos, int digits, int& out) {
  if (pos + digits > s.size()) return false;
  int v = 0;
  for (int i = 0; i < digits; ++i) {
    char c = s[pos + i];
    if (c < '0' || c > '9') return false;
    v = v * 10 + (c - '0');
  }
  pos += digits;
  out = v;
  return true;
}

// Writes `v`'s last `n` decimal digits at p[0..n), zero-padded. The formatters below use it for
// years 0-9999 and snprintf beyond: answers at 100 results write hundreds of dates, and
// snprintf's format parsing was ~3 % of such a search's CPU.
void PutDigits(char* p, unsigned v, int n) {
  for (int i = n - 1; i >= 0; --i) {
    p[i] = static_cast<char>('0' + v % 10);
    v /= 10;
  }
}

bool FourDigitYear(int64_t y) { return y >= 0 && y <= 9999; }

// "YYYY-MM-DD" at p[0..10), for a FourDigitYear date.
void PutDate(char* p, const Civil& date) {
  PutDigits(p, static_cast<unsigned>(date.y), 4);
  PutDigits(p + 5, date.m, 2);
  PutDigits(p + 8, date.d, 2);
}

}  // namespace

std::string FormatIsoMicros(int64_t micros) {
  const Split s = SplitMicros(micros);
  if (!FourDigitYear(s.date.y)) {
    char buf[48];
    std::snprintf(buf, sizeof buf, "%04lld-%02u-%02uT%02d:%02d:%02d.%06lldZ",
                  static_cast<long long>(s.date.y), s.date.m, s.date.d, s.hh, s.mm, s.ss,
                  static_cast<long long>(s.us));
    return buf;
  }
  std::string out = "0000-00-00T00:00:00.000000Z";
  char* p = out.data();
  PutDate(p, s.date);
  PutDigits(p + 11, static_cast<unsigned>(s.hh), 2);
  PutDigits(p + 14, static_cast<unsigned>(s.mm), 2);
  PutDigits(p + 17, static_cast<unsigned>(s.ss), 2);
  PutDigits(p + 20, static_cast<unsigned>(s.us), 6);
  return out;
}

std::string FormatIsoMillis(int64_t micros) {
  // FormatIsoMicros floors to the second also before the epoch, so its fraction's first three
  // digits are the floored millisecond.
  std::string s = FormatIsoMicros(micros);
  s.erase(s.size() - 4, 3);  // "…ss.mmmuuuZ" -> "…ss.mmmZ"
  return s;
}

std::string FormatHumanMinute(int64_t micros) {
  const Split s = SplitMicros(micros);
  static const char* kDays[] = {"Thu", "Fri", "Sat", "Sun", "Mon", "Tue", "Wed"};
  int64_t secs = micros >= 0 ? micros / 1000000 : -((-micros + 999999) / 1000000);
  int64_t days = secs >= 0 ? secs / 86400 : -((-secs + 86399) / 86400);
  const char* dow = kDays[((days % 7) + 7) % 7];
  if (!FourDigitYear(s.date.y)) {
    char buf[64];
    std::snprintf(buf, sizeof buf, "%04lld-%02u-%02u (%s) %02d:%02d UTC",
                  static_cast<long long>(s.date.y), s.date.m, s.date.d, dow, s.hh, s.mm);
    return buf;
  }
  std::string out = "0000-00-00 (Ddd) 00:00 UTC";
  char* p = out.data();
  PutDate(p, s.date);
  std::memcpy(p + 12, dow, 3);
  PutDigits(p + 17, static_cast<unsigned>(s.hh), 2);
  PutDigits(p + 20, static_cast<unsigned>(s.mm), 2);
  return out;
}

std::optional<int64_t> ParseIsoToMicros(std::string_view t) {
  size_t p = 0;
  int y, mo, d;
  if (!ReadInt(t, p, 4, y)) return std::nullopt;
  if (p >= t.size() || t[p++] != '-') return std::nullopt;
  if (!ReadInt(t, p, 2, mo)) return std::nullopt;
  if (p >= t.size() || t[p++] != '-') return std::nullopt;
  if (!ReadInt(t, p, 2, d)) return std::nullopt;
  if (mo < 1 || mo > 12 || d < 1 || d > 31) return std::nullopt;
  static const int kMonthDays[] = {31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
  if (d > kMonthDays[mo - 1]) return std::nullopt;
  bool leap = (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
  if (mo == 2 && d == 29 && !leap) return std::nullopt;
  int hh = 0, mi = 0, ss = 0;
  int64_t frac_us = 0;
  int64_t offset_s = 0;
  if (p < t.size()) {
    if (t[p] != 'T' && t[p] != 't' && t[p] != ' ') return std::nullopt;
    ++p;
    if (!ReadInt(t, p, 2, hh)) return std::nullopt;
    if (p >= t.size() || t[p++] != ':') return std::nullopt;
    if (!ReadInt(t, p, 2, mi)) return std::nullopt;
    if (p < t.size() && t[p] == ':') {
      ++p;
      if (!ReadInt(t, p, 2, ss)) return std::nullopt;
      if (p < t.size() && (t[p] == '.' || t[p] == ',')) {
        ++p;
        int digits = 0;
        while (p < t.size() && t[p] >= '0' && t[p] <= '9') {
          if (digits < 6) frac_us = frac_us * 10 + (t[p] - '0');
          ++digits;
          ++p;
        }
        if (digits == 0) return std::nullopt;
        for (int i = digits; i < 6; ++i) frac_us *= 10;
      }
    }
    if (hh > 23 || mi > 59 || ss > 60) return std::nullopt;
    if (p < t.size()) {
      char c = t[p];
      if (c == 'Z' || c == 'z') {
        ++p;
      } else if (c == '+' || c == '-') {
        ++p;
        int oh, om = 0;
        if (!ReadInt(t, p, 2, oh)) return std::nullopt;
        if (p < t.size() && t[p] == ':') ++p;
        if (p < t.size() && !ReadInt(t, p, 2, om)) return std::nullopt;
        if (oh > 23 || om > 59) return std::nullopt;
        offset_s = (oh * 3600 + om * 60) * (c == '+' ? 1 : -1);
      } else {
        return std::nullopt;
      }
    }
    if (p != t.size()) return std::nullopt;
  }
  int64_t days = DaysFromCivil(y, static_cast<unsigned>(mo), static_cast<unsigned>(d));
  int64_t secs = days * 86400 + hh * 3600 + mi * 60 + ss - offset_s;
  return secs * 1000000 + frac_us;
}

}  // namespace engram
