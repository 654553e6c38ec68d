// The rule-based extractor's shared parts, private to extract/rule_based_*.cc: the word lists and
// text helpers, the date words the clause splitter needs, the tokens and clauses of a sentence,
// and the fact patterns ExtractFacts applies to each clause. Nothing outside those files includes
// this header; everyone else uses extract/rule_based_extractor.h (whose rule_extract namespace
// holds the building blocks the tests call).
//
// Thread-safety: pure functions; the word lists are function-local statics, built once and
// read-only afterwards.
#pragma once

#include <algorithm>
#include <cctype>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_set>
#include <vector>

namespace engram {
namespace rule_extract_internal {

using WordSet = std::unordered_set<std::string_view>;

// The words of a space-separated string literal (the views point into the literal).
WordSet Words(std::string_view list);

// ---------------------------------------------------------------------------------------------
// Text helpers (ASCII case folding: the word lists are English).

inline bool IsAlnum(char c) { return std::isalnum(static_cast<unsigned char>(c)) != 0; }
inline bool IsDigit(char c) { return c >= '0' && c <= '9'; }
inline bool IsUpper(char c) { return c >= 'A' && c <= 'Z'; }
// Bytes of multi-byte UTF-8 characters count as word characters (names such as "Zürich").
inline bool IsWordChar(char c) { return IsAlnum(c) || static_cast<unsigned char>(c) >= 0x80; }

inline bool EndsWith(std::string_view s, std::string_view suffix) {
  return s.size() >= suffix.size() && s.substr(s.size() - suffix.size()) == suffix;
}

inline bool AllDigits(std::string_view s) {
  return !s.empty() && std::all_of(s.begin(), s.end(), IsDigit);
}

inline bool HasDigit(std::string_view s) { return std::any_of(s.begin(), s.end(), IsDigit); }

std::string Lower(std::string_view s);
// Curly apostrophes and quotes become ASCII so that one set of word lists covers both.
std::string AsciiQuotes(std::string_view s);
std::vector<std::string_view> SplitWords(std::string_view s);
std::string Join(const std::vector<std::string>& words, size_t from = 0, size_t to = SIZE_MAX);

// A word split into leading punctuation, core and trailing punctuation: "(Berlin)," ->
// "(", "Berlin", "),". Apostrophes and hyphens inside the core stay.
struct Word {
  std::string lead, core, trail, lower;
};

Word SplitPunct(std::string_view w);

// ---------------------------------------------------------------------------------------------
// Dates (rule_based_dates.cc).

int MonthIndex(std::string_view core);     // 1..12, or 0; needs the capital ("may" is a verb)
int WeekdayIndex(std::string_view lower);  // Monday = 0; -1 for anything else ("mondays")
// "day", "week", "month" or "year" for the unit or its plural; empty for anything else.
std::string_view Unit(std::string_view w);

// ---------------------------------------------------------------------------------------------
// Word lists (rule_based_words.cc). Function-local statics: built once, thread-safe, read-only
// afterwards.

const WordSet& DroppedAdverbs();
const WordSet& KeptAdverbs();
const WordSet& HabitVerbs();
const WordSet& IrregularPast();
const WordSet& NonFactPast();
const WordSet& JobNouns();
const WordSet& SingleValued();
const WordSet& HypotheticalWords();
const WordSet& ContextWords();
const WordSet& Fillers();

// The third-person form of a verb ("have" -> "has", "watch" -> "watches").
std::string ThirdPerson(std::string_view v);
// Crude inflection stripper for comparisons only ("plays", "playing", "played" -> "play").
std::string Stem(std::string_view word);
// True for a word that can be the verb after "my <noun>" or "user's <noun>".
bool IsVerbLike(std::string_view w, std::string_view prev);

// ---------------------------------------------------------------------------------------------
// Tokens of a sentence, contractions expanded ("I'm" -> "I", "am"; "don't" -> "do", "not").

struct Tok {
  std::string text;   // as written (without its trailing punctuation)
  std::string lower;  // lower case, without any punctuation
  std::string trail;  // trailing punctuation
};

std::vector<Tok> Tokenize(std::string_view sentence);

struct Clause {
  std::vector<Tok> toks;
  bool greeting = false;  // the sentence began with "Hi" / "Hello" / "Hey"
};

// Clauses of a sentence: a new one starts at "I" / "my" after a comma, a semicolon, or a
// conjunction ("I love hiking but I hate running"). Leading fillers are dropped and a leading time
// expression moves to the end.
std::vector<Clause> SplitClauses(const std::vector<Tok>& t);

// ---------------------------------------------------------------------------------------------
// Fact patterns (rule_based_patterns.cc): a clause rewritten as a third-person fact.

struct Rewrite {
  std::string fact;
  bool past = false;  // resolve bare weekdays and month names to the past
  bool resolve_dates = true;
};

// A clause starting with "I" (t[0]).
std::optional<Rewrite> RewriteI(const std::vector<Tok>& t, bool greeting);
// A clause starting with "my" (t[0]).
std::optional<Rewrite> RewriteMy(const std::vector<Tok>& t);
// A short answer to the assistant's last question ("What's your favorite color?" / "Blue").
std::optional<std::string> AnswerFact(std::string_view question, std::string_view answer);

}  // namespace rule_extract_internal
}  // namespace engram
