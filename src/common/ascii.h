// ASCII white space (testing and trimming it), hexadecimal digits and ASCII case-insensitive
// comparison.
// Thread-safety: pure functions.
#pragma once

#include <string>
#include <string_view>

namespace engram {

// ' ', '\t', '\n', '\r', '\f' or '\v' (what std::isspace accepts in the "C" locale).
constexpr bool IsAsciiSpace(char c) {
  return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v';
}

// `s` without ASCII white space at its end.
constexpr std::string_view TrimRightAsciiSpace(std::string_view s) {
  while (!s.empty() && IsAsciiSpace(s.back())) s.remove_suffix(1);
  return s;
}

// `s` without ASCII white space at either end.
constexpr std::string_view TrimAsciiSpace(std::string_view s) {
  while (!s.empty() && IsAsciiSpace(s.front())) s.remove_prefix(1);
  return TrimRightAsciiSpace(s);
}

constexpr char ToLowerAscii(char c) {
  return c >= 'A' && c <= 'Z' ? static_cast<char>(c - 'A' + 'a') : c;
}

// `s` with its ASCII letters in lower case (other bytes, UTF-8 included, unchanged).
inline std::string LowerAscii(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = ToLowerAscii(c);
  return out;
}

// The value of a hexadecimal digit (either case), or -1.
constexpr int HexDigitValue(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

// Equal but for the case of ASCII letters (HTTP header names and tokens such as "identity").
constexpr bool EqualsIgnoreAsciiCase(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    if (ToLowerAscii(a[i]) != ToLowerAscii(b[i])) return false;
  }
  return true;
}

}  // namespace engram
