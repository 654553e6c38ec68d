// Sentence analysis for the rule-based extractor: sentences of a message, the comparison key of a
// text, the tokens of a sentence and its first-person clauses.
#include <algorithm>
#include <array>
#include <cstddef>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "common/ascii.h"
#include "extract/rule_based_extractor.h"
#include "extract/rule_based_internal.h"

namespace engram {
namespace rule_extract_internal {

// ---------------------------------------------------------------------------------------------
// Tokens of a sentence, contractions expanded ("I'm" -> "I", "am"; "don't" -> "do", "not").

std::vector<Tok> Tokenize(std::string_view sentence) {
  // Words whose "'s" / "'m" / "'ve" / "'ll" / "'d" / "'re" is a verb, not a possessive.
  static const WordSet kContracted =
      Words("i it that he she there what who where here how name we they you");
  std::vector<Tok> out;
  for (std::string_view raw : SplitWords(sentence)) {
    Word w = SplitPunct(raw);
    if (w.core.empty()) {
      if (!out.empty()) out.back().trail += w.lead;
      continue;
    }
    auto push = [&](std::string text, std::string lower) {
      out.push_back({std::move(text), std::move(lower), ""});
    };
    const std::string& l = w.lower;
    const std::string& c = w.core;
    const size_t apos = l.find('\'');
    if (l == "cannot" || l == "can't") {
      push(w.lead + c.substr(0, 2) + "n", "can");
      push("not", "not");
    } else if (l == "won't") {
      push(w.lead + c.substr(0, 1) + "ill", "will");
      push("not", "not");
    } else if (EndsWith(l, "n't") && l.size() > 3) {
      push(w.lead + c.substr(0, c.size() - 3), l.substr(0, l.size() - 3));
      push("not", "not");
    } else if (apos != std::string::npos && apos + 1 < l.size() &&
               kContracted.count(std::string_view(l).substr(0, apos)) > 0) {
      static const std::array<std::pair<std::string_view, std::string_view>, 6> kTails = {
          {{"m", "am"},
           {"ve", "have"},
           {"ll", "will"},
           {"d", "would"},
           {"s", "is"},
           {"re", "are"}}};
      std::string tail = l.substr(apos + 1), expanded = tail;
      for (const auto& [from, to] : kTails) {
        if (tail == from) expanded = std::string(to);
      }
      push(w.lead + c.substr(0, apos), l.substr(0, apos));
      push(expanded, expanded);
    } else {
      std::string lower;
      for (char ch : l) {
        if (IsWordChar(ch) || ch == '\'' || ch == '-') lower += ch;
      }
      push(w.lead + c, lower);
    }
    out.back().trail = w.trail;
  }
  return out;
}

namespace {

bool StartsFirstPerson(const std::vector<Tok>& t, size_t k) {
  return k < t.size() && (t[k].lower == "i" || t[k].lower == "my");
}

// Length of the time expression at t[from] ("Yesterday", "Last week,", "In 2019") when the first
// person follows it; 0 otherwise.
size_t TemporalPrefix(const std::vector<Tok>& t, size_t from = 0) {
  static const WordSet kTime = Words(
      "yesterday today tonight tomorrow last next this on in at ago a an the earlier week month "
      "year weekend night morning afternoon evening day days weeks months years couple of few "
      "monday tuesday wednesday thursday friday saturday sunday january february march april may "
      "june july august september october november december one two three four five six seven "
      "eight nine ten");
  static const WordSet kWeak = Words("on in at a an the of this");
  bool strong = false;
  for (size_t k = from; k < t.size() && k < from + 5; ++k) {
    if (StartsFirstPerson(t, k)) return strong ? k - from : 0;
    if (kTime.count(t[k].lower) == 0 && !AllDigits(t[k].lower)) return 0;
    strong = strong || kWeak.count(t[k].lower) == 0;
  }
  return 0;
}

// Length of "please remember (that)", "note that", "keep in mind (that)", "don't forget (that)",
// "just so you know", "for the record" at t[k]; 0 if none.
size_t MemoPrefix(const std::vector<Tok>& t, size_t k) {
  static const std::string_view kPrefixes =
      "please|remember that|remember|note that|keep in mind that|keep in mind|do not forget that|"
      "just so you know|for the record";
  for (size_t b = 0; b < kPrefixes.size();) {
    const size_t e = std::min(kPrefixes.find('|', b), kPrefixes.size());
    const std::vector<std::string_view> words = SplitWords(kPrefixes.substr(b, e - b));
    b = e + 1;
    size_t n = 0;
    while (n < words.size() && k + n < t.size() && t[k + n].lower == words[n]) ++n;
    if (n == words.size() && k + n < t.size()) return n;
  }
  return 0;
}

// True when a clause starts at t[k]: "I ...", "my ...", "yesterday I ...".
bool StartsClause(const std::vector<Tok>& t, size_t k) {
  return StartsFirstPerson(t, k) || TemporalPrefix(t, k) > 0;
}

// True when t[from, k) is a time expression (possibly after fillers), so that "Yesterday, I ..."
// stays one clause.
bool TemporalOnly(const std::vector<Tok>& t, size_t from, size_t k) {
  while (from < k && Fillers().count(t[from].lower) > 0) ++from;
  return from < k && TemporalPrefix(t, from) == k - from;
}

}  // namespace

size_t RequestStart(const std::vector<Tok>& t, bool question) {
  static const WordSet kAsk = Words("can could would will do does did");
  static const WordSet kQuestion = Words(
      "what which how where who when why any anything anyone is are should shall ideas thoughts "
      "suggestions recommendations tips advice");
  static const WordSet kAddressed = Words("you u i we there it");
  for (size_t k = 1; k < t.size(); ++k) {
    if (t[k - 1].trail.find_first_of(",;-") == std::string::npos) continue;
    const std::string& w = t[k].lower;
    const std::string_view next = k + 1 < t.size() ? std::string_view(t[k + 1].lower) : "";
    // "I like coffee, please recommend some": the request states nothing about the user, so the
    // statement before it stands on its own.
    if (w == "please") return k;
    if (kAsk.count(w) > 0 && kAddressed.count(next) > 0) return k;
    if (question && kQuestion.count(w) > 0) return k;
  }
  return t.size();
}

// Clauses of a sentence: a new one starts at "I" / "my" after a comma, a semicolon, or a
// conjunction ("I love hiking but I hate running"), and at a second predicate of the subject
// (SplitPredicates). Leading fillers are dropped and a leading time expression moves to the end.
std::vector<Clause> SplitClauses(const std::vector<Tok>& t) {
  static const WordSet kConjunctions =
      Words("and but so because although though while as plus yet cause cuz whereas");
  std::vector<Clause> out(1);
  size_t clause_start = 0;
  for (size_t k = 0; k < t.size(); ++k) {
    // "My husband and I are moving", "I and my wife went hiking": "and" joins subjects here, not
    // clauses.
    const bool short_subject = !out.back().toks.empty() &&
                               ((out.back().toks.size() <= 3 && out.back().toks[0].lower == "my") ||
                                (out.back().toks.size() == 1 && out.back().toks[0].lower == "i"));
    const bool conj = kConjunctions.count(t[k].lower) > 0 && StartsClause(t, k + 1) &&
                      !(short_subject && t[k].lower == "and");
    const bool after_punct = k > 0 && StartsClause(t, k) &&
                             t[k - 1].trail.find_first_of(",;:-") != std::string::npos &&
                             !TemporalOnly(t, clause_start, k);
    if ((conj || after_punct) && !out.back().toks.empty()) {
      out.back().toks.back().trail.clear();
      out.emplace_back();
      clause_start = conj ? k + 1 : k;
    }
    if (conj) continue;
    out.back().toks.push_back(t[k]);
  }
  std::vector<Clause> clauses;
  for (Clause& c : out) {
    size_t k = 0;
    while (k < c.toks.size()) {
      const std::string& w = c.toks[k].lower;
      if (w == "hi" || w == "hello" || w == "hey") c.greeting = true;
      if (k + 2 < c.toks.size() && w == "by" && c.toks[k + 1].lower == "the" &&
          c.toks[k + 2].lower == "way") {
        k += 3;
        continue;
      }
      // "Please remember that I ...", "Just so you know, I ...": a request to remember.
      if (const size_t n = MemoPrefix(c.toks, k); n > 0) {
        k += n;
        continue;
      }
      if (Fillers().count(w) == 0 || StartsFirstPerson(c.toks, k)) break;
      ++k;
    }
    c.toks.erase(c.toks.begin(), c.toks.begin() + static_cast<std::ptrdiff_t>(k));
    for (Clause& part : SplitPredicates(c, TemporalPrefix(c.toks))) clauses.push_back(part);
  }
  for (Clause& c : clauses) {
    // "Yesterday I went ..." -> "I went ... yesterday".
    if (const size_t n = TemporalPrefix(c.toks); n > 0) {
      if (MonthIndex(c.toks[0].text) == 0 && WeekdayIndex(c.toks[0].lower) < 0) {
        c.toks[0].text = c.toks[0].lower;  // "In 2019" -> "in 2019"
      }
      c.toks[n - 1].trail.clear();
      c.toks.back().trail.clear();
      std::rotate(c.toks.begin(), c.toks.begin() + static_cast<std::ptrdiff_t>(n), c.toks.end());
    }
  }
  return clauses;
}

}  // namespace rule_extract_internal

using namespace rule_extract_internal;  // NOLINT: the extractor's own parts, private to its files

namespace rule_extract {

std::vector<std::string> SplitSentences(std::string_view input) {
  static const WordSet kTitles = Words("dr mr mrs ms prof st sr jr mt");
  static const WordSet kAbbreviations =
      Words("e.g i.e etc vs approx incl cf al esp min max no fig ca");
  std::vector<std::string> out;
  std::string current;
  auto flush = [&] {
    std::string_view t = TrimAsciiSpace(current);
    if (!t.empty()) out.emplace_back(t);
    current.clear();
  };
  const std::string text = AsciiQuotes(input);
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (c == '\n' || c == '\r') {
      flush();
      continue;
    }
    current += c;
    if (c != '.' && c != '!' && c != '?') continue;
    // Take the whole run of terminal punctuation and closing quotes / brackets.
    size_t j = i + 1;
    while (j < text.size() && (text[j] == '.' || text[j] == '!' || text[j] == '?'))
      current += text[j++];
    while (j < text.size() && (text[j] == '"' || text[j] == '\'' || text[j] == ')'))
      current += text[j++];
    i = j - 1;
    if (j < text.size() && !IsAsciiSpace(text[j])) continue;  // "3.5", "e.g.x", "example.com"
    if (c == '.') {
      // The word before the dot.
      size_t end = current.size() - 1;
      while (end > 0 && (current[end] == '.' || current[end] == '"' || current[end] == ')')) --end;
      size_t start = end + 1;
      while (start > 0 && !IsAsciiSpace(current[start - 1])) --start;
      const std::string word = Lower(std::string_view(current).substr(start, end + 1 - start));
      const std::string_view w = TrimAsciiSpace(word);
      // Next word's first character.
      size_t k = j;
      while (k < text.size() && (text[k] == ' ' || text[k] == '\t')) ++k;
      const bool next_lower =
          k < text.size() &&
          (std::islower(static_cast<unsigned char>(text[k])) || IsDigit(text[k]));
      const bool at_line_start = TrimAsciiSpace(std::string_view(current).substr(0, start)).empty();
      if (kTitles.count(w) > 0) continue;
      if (kAbbreviations.count(w) > 0 && next_lower) continue;
      if (w.size() == 1 && std::isalpha(static_cast<unsigned char>(w[0])) &&
          IsUpper(current[start])) {
        continue;  // an initial: "J. R. Tolkien"
      }
      if (at_line_start && AllDigits(w) && w.size() <= 3) continue;  // "1. Buy milk"
    }
    flush();
  }
  flush();
  return out;
}

std::string NormalizeForComparison(std::string_view input) {
  static const WordSet kIsContractions = Words("it he she that what there who where here how when");
  static const std::array<std::pair<std::string_view, std::string_view>, 7> kSuffixes = {
      {{"n't", "not"},
       {"'m", "am"},
       {"'re", "are"},
       {"'ve", "have"},
       {"'ll", "will"},
       {"'d", "would"},
       {"'s", "is"}}};
  std::string out;
  auto emit = [&out](std::string_view w) {
    if (w.empty() || w == "a" || w == "an" || w == "the") return;
    if (!out.empty()) out += ' ';
    out += w;
  };
  // Contractions expand: "can't" -> "can not", "it's" -> "it is" (but "user's" stays).
  auto expand = [&](const std::string& w) {
    if (w == "can't" || w == "cannot") return emit("can"), emit("not");
    if (w == "won't") return emit("will"), emit("not");
    if (w == "let's") return emit("let"), emit("us");
    for (const auto& [suffix, word] : kSuffixes) {
      const std::string_view stem = std::string_view(w).substr(0, w.size() - suffix.size());
      if (w.size() > suffix.size() && EndsWith(w, suffix) &&
          (suffix != "'s" || kIsContractions.count(stem) > 0)) {
        return emit(stem), emit(word);
      }
    }
    emit(w);
  };
  const std::string text = Lower(AsciiQuotes(input));
  for (std::string_view raw : SplitWords(text)) {
    // Keep word characters; keep '-', '\'', ':' and a decimal point only between them.
    std::string w;
    for (size_t i = 0; i < raw.size(); ++i) {
      const char c = raw[i];
      if (IsWordChar(c)) {
        w += c;
      } else if ((c == '-' || c == '\'' || c == '.' || c == ':') && i > 0 && i + 1 < raw.size() &&
                 IsWordChar(raw[i - 1]) && IsWordChar(raw[i + 1]) &&
                 (c != '.' || (IsDigit(raw[i - 1]) && IsDigit(raw[i + 1])))) {
        w += c;
      } else {
        expand(w);
        w.clear();
      }
    }
    expand(w);
  }
  return out;
}

}  // namespace rule_extract
}  // namespace engram
