#include "index/entity_mentions.h"

#include <unicode/uchar.h>
#include <unicode/utf8.h>

#include <optional>

#include "common/ascii.h"
#include "index/question_form.h"

namespace engram {
namespace {

// Capitalised words that are not names in English text: the calendar's and their abbreviations
// (the date resolver reads them) and "OK". The pronoun "I" and its contractions are tested apart
// (IsPronounI). A title is skipped and its period does not end the sentence ("Dr. Smith" mentions
// "Smith").
constexpr std::string_view kNotNames[] = {
    "January",   "February", "March",    "April",    "June",   "July",    "August",
    "September", "October",  "November", "December", "Monday", "Tuesday", "Wednesday",
    "Thursday",  "Friday",   "Saturday", "Sunday",   "Jan",    "Feb",     "Mar",
    "Apr",       "Jun",      "Jul",      "Aug",      "Sep",    "Sept",    "Oct",
    "Nov",       "Dec",      "Mon",      "Tue",      "Tues",   "Wed",     "Thu",
    "Thur",      "Thurs",    "Fri",      "Sat",      "Sun",    "OK"};
constexpr std::string_view kTitles[] = {"Mr", "Mrs", "Ms", "Dr", "Prof", "St"};
// Lower-case words that may join the capitalised words of one name ("Bank of America", "Leonardo
// da Vinci", "Johnson & Johnson").
constexpr std::string_view kConnectors[] = {"of", "the", "de",  "da",  "del", "della", "di", "du",
                                            "la", "le",  "van", "von", "der", "den",   "&"};

template <size_t N>
bool OneOf(const std::string_view (&words)[N], std::string_view w) {
  for (std::string_view x : words) {
    if (x == w) return true;
  }
  return false;
}

// Punctuation that may wrap a word: ASCII and the typographic quotes, as UTF-8.
constexpr std::string_view kWideWrappers[] = {
    "\xE2\x80\x9C", "\xE2\x80\x9D", "\xE2\x80\x98", "\xE2\x80\x99",   // “ ” ‘ ’
    "\xC2\xAB",     "\xC2\xBB",     "\xE2\x80\xA6", "\xE2\x80\x94"};  // « » … —

bool IsWrapperAscii(char c) {
  switch (c) {
    case '"':
    case '\'':
    case '(':
    case ')':
    case '[':
    case ']':
    case '{':
    case '}':
    case '*':
    case '<':
    case '>':
    case '.':
    case ',':
    case ';':
    case ':':
    case '!':
    case '?':
    case '-':
    case '_':
    case '`':
    case '/':
    case '#':
    case '|':
      return true;
    default:
      return false;
  }
}

// Length of one wrapping punctuation mark at the front (or back) of `s`; 0 when there is none.
size_t WrapperAtFront(std::string_view s) {
  if (s.empty()) return 0;
  if (IsWrapperAscii(s.front())) return 1;
  for (std::string_view w : kWideWrappers) {
    if (s.starts_with(w)) return w.size();
  }
  return 0;
}
size_t WrapperAtBack(std::string_view s) {
  if (s.empty()) return 0;
  if (IsWrapperAscii(s.back())) return 1;
  for (std::string_view w : kWideWrappers) {
    if (s.ends_with(w)) return w.size();
  }
  return 0;
}

// One whitespace-separated token, its word and what the punctuation around it says.
struct Token {
  std::string_view word;       // without wrapping punctuation and a possessive
  bool break_before = false;   // punctuation before it (a quote, a parenthesis) ends a name
  bool break_after = false;    // punctuation after it (a comma, a possessive) ends a name
  bool ends_sentence = false;  // ". ! ? :" or "…" after it: the next word opens a sentence
  bool colon = false;          // ':' right after it
  bool code = false;           // in backticks
  bool call = false;           // followed by "()": `word` is called
};

Token Split(std::string_view raw) {
  Token t;
  std::string_view s = raw;
  t.code = s.size() > 2 && s.find('`') != std::string_view::npos;
  while (size_t n = WrapperAtFront(s)) {
    t.break_before = true;
    s.remove_prefix(n);
  }
  while (size_t n = WrapperAtBack(s)) {
    if (s.ends_with("()") && s.size() > 2) {  // a call: the parentheses are part of it
      t.call = true;
      s.remove_suffix(2);
      break;
    }
    const std::string_view mark = s.substr(s.size() - n);
    if (mark == "." || mark == "!" || mark == "?" || mark == ":" || mark == "\xE2\x80\xA6") {
      t.ends_sentence = true;
    }
    if (mark == ":") t.colon = true;
    t.break_after = true;
    s.remove_suffix(n);
  }
  for (std::string_view possessive : {std::string_view("'s"), std::string_view("\xE2\x80\x99s")}) {
    if (s.size() > possessive.size() && s.ends_with(possessive)) {
      s.remove_suffix(possessive.size());
      t.break_after = true;
    }
  }
  t.word = s;
  return t;
}

// Whether `w` is written as a name's word: an upper- or title-case letter, then letters (with
// inner hyphens and apostrophes) among which a lower-case one, or 2–5 capitals (an acronym).
bool IsNameWord(std::string_view w) {
  if (w.empty()) return false;
  int32_t i = 0;
  const auto n = static_cast<int32_t>(w.size());
  UChar32 c = 0;
  U8_NEXT(w.data(), i, n, c);
  if (c < 0 || !(u_isupper(c) || u_istitle(c))) return false;
  bool lower = false;
  int letters = 1;
  while (i < n) {
    U8_NEXT(w.data(), i, n, c);
    if (c < 0) return false;
    if (c == '-' || c == '\'' || c == 0x2019) continue;
    if (!u_isalpha(c)) return false;
    ++letters;
    lower = lower || u_islower(c);
  }
  return lower || (letters >= 2 && letters <= 5);
}

bool HasLowerCase(std::string_view w) {
  int32_t i = 0;
  const auto n = static_cast<int32_t>(w.size());
  while (i < n) {
    UChar32 c = 0;
    U8_NEXT(w.data(), i, n, c);
    if (c >= 0 && u_islower(c)) return true;
  }
  return false;
}

bool IsPronounI(std::string_view w) {
  return w == "I" || w.starts_with("I'") || w.starts_with("I\xE2\x80\x99");
}

// A code identifier: in backticks, or shaped like one (NamesCodeIdentifier), or called ("name()").
bool IsIdentifier(const Token& t) {
  if (t.word.empty()) return false;
  if (NamesCodeIdentifier(t.word)) return true;
  if (!t.code && !t.call) return false;
  for (char c : t.word) {
    if (IsAsciiSpace(c)) return false;
  }
  return true;
}

// A heading or a title on a line of its own ("Tips for Staying Healthy:", "**Additional
// Resources**"): at least two words, three in four of them capitalised (connectors aside), and no
// sentence punctuation. Its capitals are the heading's style, not names.
bool IsHeadingLine(std::string_view line) {
  constexpr size_t kMaxHeadingBytes = 200;
  if (line.size() > kMaxHeadingBytes) return false;
  size_t words = 0;
  size_t capitalised = 0;
  size_t i = 0;
  while (i < line.size()) {
    if (IsAsciiSpace(line[i])) {
      ++i;
      continue;
    }
    size_t j = i;
    while (j < line.size() && !IsAsciiSpace(line[j])) ++j;
    const Token t = Split(line.substr(i, j - i));
    i = j;
    if (t.ends_sentence && !t.colon) return false;
    if (t.word.empty() || OneOf(kConnectors, t.word)) continue;
    ++words;
    capitalised += IsNameWord(t.word) ? 1 : 0;
  }
  return words >= 2 && capitalised * 4 >= words * 3;
}

}  // namespace

std::string_view EntityKindName(EntityKind kind) {
  return kind == EntityKind::kIdentifier ? "identifier" : "name";
}

std::vector<EntityMention> FindEntityMentions(std::string_view text) {
  std::vector<EntityMention> out;
  // The name being read: its words' range in `text`, and where its last name word ends.
  std::optional<size_t> span_begin;
  size_t span_end = 0;        // end of the last name word
  size_t second_word = 0;     // start of the first name word after the first, 0 when none
  bool span_initial = false;  // its first word opens a sentence
  bool at_text_start = true;  // no token read yet
  bool span_at_text_start = false;

  bool in_heading = false;  // the current line is a heading (IsHeadingLine)
  size_t span_words = 0;
  bool span_lower = false;  // some word of it has a lower-case letter
  auto emit = [&](bool speaker) {
    if (!span_begin) return;
    if (span_words > 1 && !span_lower) {  // capitals only: shouting ("JUST DO IT"), not a name
      span_begin.reset();
      second_word = 0;
      return;
    }
    const std::string_view whole = text.substr(*span_begin, span_end - *span_begin);
    const bool initial = (span_initial && !speaker) || in_heading;
    out.push_back({std::string(whole), EntityKind::kName, initial});
    if (initial && second_word > 0) {
      out.push_back({std::string(text.substr(second_word, span_end - second_word)),
                     EntityKind::kName, in_heading});
    }
    span_begin.reset();
    second_word = 0;
  };

  bool sentence_start = true;
  bool after_title = false;
  size_t pending_connector = 0;  // connectors read since the last name word
  auto heading_at = [&](size_t line_begin) {
    const size_t end = text.find('\n', line_begin);
    return IsHeadingLine(text.substr(
        line_begin, end == std::string_view::npos ? text.size() - line_begin : end - line_begin));
  };
  in_heading = heading_at(0);
  size_t i = 0;
  while (i < text.size()) {
    if (IsAsciiSpace(text[i])) {
      if (text[i] == '\n') {
        emit(false);
        sentence_start = true;
        in_heading = heading_at(i + 1);
      }
      ++i;
      continue;
    }
    size_t j = i;
    while (j < text.size() && !IsAsciiSpace(text[j])) ++j;
    const std::string_view raw = text.substr(i, j - i);
    const Token t = Split(raw);
    const size_t word_at = static_cast<size_t>(t.word.data() - text.data());
    const bool text_start = at_text_start;
    at_text_start = false;
    i = j;

    if (t.break_before) emit(false);
    if (t.word.empty()) {  // punctuation alone (a bullet, a dash, a table's bar) opens anew
      emit(false);
      sentence_start = true;
      continue;
    }
    if (IsIdentifier(t)) {
      emit(false);
      out.push_back({std::string(t.word) + (t.call ? "()" : ""), EntityKind::kIdentifier, false});
      sentence_start = t.ends_sentence;
      continue;
    }
    if (OneOf(kTitles, t.word)) {  // "Dr." neither ends a sentence nor is a name
      emit(false);
      after_title = true;
      sentence_start = false;
      continue;
    }
    const bool name_word = IsNameWord(t.word) && !IsPronounI(t.word) && !OneOf(kNotNames, t.word);
    if (name_word) {
      if (!span_begin) {
        span_words = 0;
        span_lower = false;
        span_begin = word_at;
        span_initial = sentence_start && !after_title;
        span_at_text_start = text_start;
      } else if (second_word == 0) {
        second_word = word_at;
      }
      span_end = word_at + t.word.size();
      ++span_words;
      span_lower = span_lower || HasLowerCase(t.word);
      pending_connector = 0;
      if (t.break_after) emit(t.colon && span_at_text_start);
    } else if (span_begin && !t.break_after && pending_connector < 2 &&
               OneOf(kConnectors, t.word)) {
      ++pending_connector;  // kept only if a name word follows
    } else {
      emit(false);
      pending_connector = 0;
    }
    after_title = false;
    sentence_start = t.ends_sentence;
  }
  emit(false);
  return out;
}

}  // namespace engram
