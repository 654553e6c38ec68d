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

}  // namespace

bool EndsWithQuestion(std::string_view text) {
  while (!text.empty() && (IsAsciiSpace(text.back()) || text.back() == '"' || text.back() == '\'' ||
                           text.back() == ')')) {
    text.remove_suffix(1);
  }
  return DropQuestionMark(&text);
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
