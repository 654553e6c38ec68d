#include "index/question_form.h"

#include <array>

#include "common/ascii.h"

namespace engram {
namespace {

constexpr std::array<std::string_view, 3> kQuestionMarks = {"?", "\xEF\xBC\x9F", "\xD8\x9F"};

// Removes one question mark from the end of `s`; false if it does not end with one.
bool DropQuestionMark(std::string_view* s) {
  for (std::string_view mark : kQuestionMarks) {
    if (s->ends_with(mark)) {
      s->remove_suffix(mark.size());
      return true;
    }
  }
  return false;
}

bool IsLower(char c) { return c >= 'a' && c <= 'z'; }
bool IsUpper(char c) { return c >= 'A' && c <= 'Z'; }
bool IsAlnum(char c) { return IsLower(c) || IsUpper(c) || (c >= '0' && c <= '9'); }

}  // namespace

bool EndsWithQuestion(std::string_view text) {
  while (!text.empty() && (IsAsciiSpace(text.back()) || text.back() == '"' || text.back() == '\'' ||
                           text.back() == ')')) {
    text.remove_suffix(1);
  }
  return DropQuestionMark(&text);
}

bool NamesCodeIdentifier(std::string_view query) {
  int case_steps = 0;  // lower-to-upper steps in the current word
  for (size_t i = 0; i < query.size(); ++i) {
    const char c = query[i];
    const char prev = i > 0 ? query[i - 1] : ' ';
    const char next = i + 1 < query.size() ? query[i + 1] : ' ';
    if (c == '_' && IsAlnum(prev) && IsAlnum(next)) return true;
    if (c == ':' && next == ':' && IsAlnum(prev) && i + 2 < query.size() && IsAlnum(query[i + 2])) {
      return true;
    }
    if (!IsAlnum(c)) {
      case_steps = 0;
      continue;
    }
    if (IsUpper(c) && IsLower(prev) && ++case_steps >= 2) return true;
  }
  return false;
}

std::string_view WithoutQuestionMark(std::string_view query) {
  std::string_view s = TrimRightAsciiSpace(query);
  bool dropped = false;
  while (DropQuestionMark(&s)) {
    dropped = true;
    s = TrimRightAsciiSpace(s);
  }
  return dropped && !s.empty() ? s : query;
}

}  // namespace engram
