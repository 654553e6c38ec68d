#include "index/question_form.h"

#include <array>

namespace engram {
namespace {

constexpr std::array<std::string_view, 3> kQuestionMarks = {"?", "\xEF\xBC\x9F", "\xD8\x9F"};

bool IsSpace(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f'; }

std::string_view TrimRightSpace(std::string_view s) {
  while (!s.empty() && IsSpace(s.back())) s.remove_suffix(1);
  return s;
}

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

}  // namespace

bool EndsWithQuestion(std::string_view text) {
  while (!text.empty() && (IsSpace(text.back()) || text.back() == '"' || text.back() == '\'' ||
                           text.back() == ')')) {
    text.remove_suffix(1);
  }
  return DropQuestionMark(&text);
}

std::string_view WithoutQuestionMark(std::string_view query) {
  std::string_view s = TrimRightSpace(query);
  bool dropped = false;
  while (DropQuestionMark(&s)) {
    dropped = true;
    s = TrimRightSpace(s);
  }
  return dropped && !s.empty() ? s : query;
}

}  // namespace engram
