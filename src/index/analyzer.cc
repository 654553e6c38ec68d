#include "index/analyzer.h"

#include <libstemmer.h>
#include <unicode/brkiter.h>
#include <unicode/locid.h>
#include <unicode/normalizer2.h>
#include <unicode/uchar.h>
#include <unicode/unistr.h>
#include <unicode/uscript.h>
#include <unicode/utf16.h>

#include <cstdint>
#include <memory>
#include <unordered_set>

namespace engram {
namespace {

// A modest English list (close to NLTK's, minus contractions' fragments). Question words are
// included: in "what did I say about X" only X carries content. Negations ("no", "not", "nor")
// are included too: BM25 cannot use them (it matches, it does not parse) and they are frequent.
// Terms are compared after case folding and before stemming.
constexpr std::string_view kStopWords[] = {
    "a",          "about",  "above",    "after",      "again",   "against", "all",    "am",
    "an",         "and",    "any",      "are",        "as",      "at",      "be",     "because",
    "been",       "before", "being",    "below",      "between", "both",    "but",    "by",
    "can",        "could",  "did",      "do",         "does",    "doing",   "down",   "during",
    "each",       "few",    "for",      "from",       "further", "had",     "has",    "have",
    "having",     "he",     "her",      "here",       "hers",    "herself", "him",    "himself",
    "his",        "how",    "i",        "i'd",        "i'll",    "i'm",     "i've",   "if",
    "in",         "into",   "is",       "it",         "its",     "itself",  "just",   "me",
    "more",       "most",   "my",       "myself",     "no",      "nor",     "not",    "of",
    "off",        "on",     "once",     "only",       "or",      "other",   "our",    "ours",
    "ourselves",  "out",    "over",     "own",        "same",    "she",     "should", "so",
    "some",       "such",   "than",     "that",       "the",     "their",   "theirs", "them",
    "themselves", "then",   "there",    "these",      "they",    "they're", "this",   "those",
    "through",    "to",     "too",      "under",      "until",   "up",      "very",   "was",
    "we",         "we're",  "were",     "what",       "when",    "where",   "which",  "while",
    "who",        "whom",   "why",      "will",       "with",    "would",   "you",    "you're",
    "your",       "yours",  "yourself", "yourselves",
};

const std::unordered_set<std::string_view>& StopWordSet() {
  // Leaked on purpose: avoids destruction-order issues with thread_local users at exit.
  static const auto* set =
      new std::unordered_set<std::string_view>(std::begin(kStopWords), std::end(kStopWords));
  return *set;
}

// ICU break iterators and Snowball stemmers are not thread-safe and are costly to create, so
// each thread keeps one of each for its lifetime.
struct ThreadResources {
  ThreadResources() {
    UErrorCode status = U_ZERO_ERROR;
    words.reset(icu::BreakIterator::createWordInstance(icu::Locale::getRoot(), status));
    if (U_FAILURE(status)) words.reset();  // Analyze falls back to splitting on non-letters.
    stemmer = sb_stemmer_new("english", "UTF_8");
  }
  ~ThreadResources() {
    if (stemmer != nullptr) sb_stemmer_delete(stemmer);
  }
  ThreadResources(const ThreadResources&) = delete;
  ThreadResources& operator=(const ThreadResources&) = delete;

  std::unique_ptr<icu::BreakIterator> words;
  // The break iterator aliases the text it is given; it points here between calls so that it
  // never refers to a destroyed string.
  const icu::UnicodeString empty;
  sb_stemmer* stemmer = nullptr;  // Null only if allocation failed: words are left unstemmed.
};

ThreadResources& Resources() {
  thread_local ThreadResources resources;
  return resources;
}

// A half-open range of UTF-16 code units in the NFKC-normalised text.
struct Span {
  int32_t start;
  int32_t end;
};

bool IsAsciiLower(char16_t c) { return c >= 'a' && c <= 'z'; }
bool IsAsciiUpper(char16_t c) { return c >= 'A' && c <= 'Z'; }
bool IsAsciiDigit(char16_t c) { return c >= '0' && c <= '9'; }
bool IsAsciiAlnum(char16_t c) { return IsAsciiLower(c) || IsAsciiUpper(c) || IsAsciiDigit(c); }
bool IsIdentSeparator(char16_t c) {
  return c == '_' || c == '.' || c == '/' || c == ':' || c == '-' || c == '@';
}
bool IsIdentChar(char16_t c) { return IsAsciiAlnum(c) || IsIdentSeparator(c); }

// True if `c` (next to an ASCII run) would make the run part of a longer Latin word, as in
// "naïve_bayes": such runs are left to the word breaker rather than cut in the middle of a word.
bool ContinuesLatinWord(UChar32 c) {
  if (u_getIntPropertyValue(c, UCHAR_GENERAL_CATEGORY_MASK) & U_GC_M_MASK) return true;
  if (u_isdigit(c)) return true;
  UErrorCode status = U_ZERO_ERROR;
  return u_isalpha(c) && uscript_getScript(c, &status) == USCRIPT_LATIN;
}

// Splits identifier text p[0, len) into parts on separators and case changes:
// "getUserName" -> get|User|Name, "HTTPServer" -> HTTP|Server, "base64Encode" -> base64|Encode,
// "URLs" stays whole (an acronym plural, not a boundary). Letter/digit changes are not split:
// "utf8", "sha256" and "ipv6" are units.
void SplitParts(const char16_t* p, int32_t len, std::vector<Span>* parts) {
  parts->clear();
  int32_t i = 0;
  while (i < len) {
    while (i < len && IsIdentSeparator(p[i])) ++i;
    int32_t start = i;
    while (i < len && !IsIdentSeparator(p[i])) {
      if (i > start && IsAsciiUpper(p[i])) {
        char16_t prev = p[i - 1];
        bool next_two_lower = i + 2 < len && IsAsciiLower(p[i + 1]) && IsAsciiLower(p[i + 2]);
        if (IsAsciiLower(prev) || ((IsAsciiUpper(prev) || IsAsciiDigit(prev)) && next_two_lower)) {
          parts->push_back({start, i});
          start = i;
        }
      }
      ++i;
    }
    if (i > start) parts->push_back({start, i});
  }
}

// Decides whether the trimmed run p[0, len) is a code identifier to be kept whole and split,
// given its parts. Plain numbers ("3.5", "10.0.0.1") and dotted abbreviations ("e.g", "U.S") are
// better handled by the word breaker, which keeps them as single words.
bool IsIdentifier(const char16_t* p, int32_t len, const std::vector<Span>& parts) {
  if (parts.size() < 2) return false;
  bool only_dots = true;
  bool only_digits = true;
  for (int32_t i = 0; i < len; ++i) {
    if (IsIdentSeparator(p[i])) {
      if (p[i] != '.') only_dots = false;
    } else if (!IsAsciiDigit(p[i])) {
      only_digits = false;
    }
  }
  if (!only_dots) return true;
  if (only_digits) return false;
  for (const Span& part : parts) {
    if (part.end - part.start > 1) return true;
  }
  return false;  // "e.g", "i.e", "U.S"
}

// Finds identifier runs (ASCII letters, digits and `_ . / : - @`) in `text`, trimmed of
// leading/trailing separators ("(foo_bar)," -> "foo_bar", "/usr/lib/" -> "usr/lib").
std::vector<Span> FindIdentifiers(const icu::UnicodeString& text) {
  std::vector<Span> out;
  std::vector<Span> parts;
  const char16_t* p = text.getBuffer();
  const int32_t n = text.length();
  int32_t i = 0;
  while (i < n) {
    if (!IsIdentChar(p[i])) {
      ++i;
      continue;
    }
    int32_t s = i;
    while (i < n && IsIdentChar(p[i])) ++i;
    int32_t e = i;
    UChar32 c;
    if (s > 0) {
      U16_GET(p, 0, s - 1, n, c);
      if (ContinuesLatinWord(c)) continue;
    }
    if (e < n) {
      U16_GET(p, 0, e, n, c);
      if (ContinuesLatinWord(c)) continue;
    }
    while (s < e && !IsAsciiAlnum(p[s])) ++s;
    while (e > s && !IsAsciiAlnum(p[e - 1])) --e;
    if (e - s < 3) continue;  // Shortest identifiers: "a_b", "iOS".
    SplitParts(p + s, e - s, &parts);
    if (IsIdentifier(p + s, e - s, parts)) out.push_back({s, e});
  }
  return out;
}

// True if every code point is a Latin letter, a combining mark or an apostrophe: the words the
// English stemmer is meant for. Numbers, CJK, Hangul, etc. are kept as they are.
bool IsLatinWord(const icu::UnicodeString& word) {
  for (int32_t i = 0; i < word.length();) {
    UChar32 c = word.char32At(i);
    i += U16_LENGTH(c);
    if (c == '\'') continue;
    if (c < 0x80) {
      if (!IsAsciiLower(static_cast<char16_t>(c)) && !IsAsciiUpper(static_cast<char16_t>(c))) {
        return false;
      }
      continue;
    }
    if (u_getIntPropertyValue(c, UCHAR_GENERAL_CATEGORY_MASK) & U_GC_M_MASK) continue;
    UErrorCode status = U_ZERO_ERROR;
    if (!u_isalpha(c) || uscript_getScript(c, &status) != USCRIPT_LATIN) return false;
  }
  return true;
}

bool IsAsciiLetters(std::string_view s) {
  for (char c : s) {
    if (!IsAsciiLower(static_cast<unsigned char>(c)) && c != '\'') return false;
  }
  return true;
}

// Emits terms into `out`; holds the per-call state of one Analyze call.
class TermSink {
 public:
  TermSink(const AnalyzerOptions& options, ThreadResources& resources,
           std::vector<std::string>* out)
      : options_(options), resources_(resources), out_(out) {}

  // A whole identifier: lower-cased, not stemmed, not stop-word filtered.
  void EmitVerbatim(std::string term) {
    if (term.empty() || term.size() > options_.max_token_bytes) return;
    out_->push_back(std::move(term));
  }

  // A case-folded word: possessive stripped, stop words dropped, Latin words stemmed.
  void EmitWord(std::string word, bool latin_letters) {
    if (word.size() > 2 && word.compare(word.size() - 2, 2, "'s") == 0) {
      word.resize(word.size() - 2);
    }
    while (!word.empty() && word.back() == '\'') word.pop_back();
    while (!word.empty() && word.front() == '\'') word.erase(0, 1);
    if (word.empty()) return;
    if (options_.remove_stopwords && Analyzer::IsStopWord(word)) return;
    if (latin_letters && options_.stem && resources_.stemmer != nullptr) {
      const sb_symbol* stemmed =
          sb_stemmer_stem(resources_.stemmer, reinterpret_cast<const sb_symbol*>(word.data()),
                          static_cast<int>(word.size()));
      if (stemmed != nullptr) {
        word.assign(reinterpret_cast<const char*>(stemmed),
                    static_cast<size_t>(sb_stemmer_length(resources_.stemmer)));
      }
    }
    EmitVerbatim(std::move(word));
  }

  // An identifier run p[0, len) of ASCII characters: whole, then its parts.
  void EmitIdentifier(const char16_t* p, int32_t len) {
    std::string whole(static_cast<size_t>(len), '\0');
    for (int32_t i = 0; i < len; ++i) {
      char16_t c = p[i];
      whole[static_cast<size_t>(i)] = static_cast<char>(IsAsciiUpper(c) ? c - 'A' + 'a' : c);
    }
    SplitParts(p, len, &parts_);
    EmitVerbatim(whole);
    for (const Span& part : parts_) {
      std::string term =
          whole.substr(static_cast<size_t>(part.start), static_cast<size_t>(part.end - part.start));
      bool letters = IsAsciiLetters(term);
      EmitWord(std::move(term), letters);
    }
  }

  // A word from the word breaker, in NFKC form (not yet case-folded).
  void EmitBrokenWord(const icu::UnicodeString& text, int32_t start, int32_t end) {
    // UTF-8 is never shorter than UTF-16 in code units, so this rejects overlong words before
    // paying for their conversion.
    if (static_cast<size_t>(end - start) > options_.max_token_bytes) return;
    const char16_t* p = text.getBuffer() + start;
    bool ascii = true;
    for (int32_t i = 0; i < end - start; ++i) {
      if (p[i] >= 0x80) {
        ascii = false;
        break;
      }
    }
    std::string word;
    bool latin_letters;
    if (ascii) {  // Fast path: NFKC_Casefold of ASCII is ASCII lower-casing.
      word.resize(static_cast<size_t>(end - start));
      for (int32_t i = 0; i < end - start; ++i) {
        word[static_cast<size_t>(i)] =
            static_cast<char>(IsAsciiUpper(p[i]) ? p[i] - 'A' + 'a' : p[i]);
      }
      latin_letters = IsAsciiLetters(word);
    } else {
      UErrorCode status = U_ZERO_ERROR;
      const icu::Normalizer2* fold = icu::Normalizer2::getNFKCCasefoldInstance(status);
      icu::UnicodeString folded;
      if (U_SUCCESS(status)) {
        folded = fold->normalize(icu::UnicodeString(text, start, end - start), status);
      }
      if (U_FAILURE(status)) folded = icu::UnicodeString(text, start, end - start).foldCase();
      folded.findAndReplace(icu::UnicodeString(static_cast<UChar32>(0x2019)),
                            icu::UnicodeString(static_cast<UChar32>('\'')));
      latin_letters = IsLatinWord(folded);
      folded.toUTF8String(word);
    }
    // '_' joins words for the breaker ("naïve_bayes", or any identifier when splitting is off).
    if (options_.split_identifiers && word.find('_') != std::string::npos) {
      EmitVerbatim(word);
      size_t pos = 0;
      while (pos <= word.size()) {
        size_t next = word.find('_', pos);
        if (next == std::string::npos) next = word.size();
        if (next > pos) {
          std::string piece = word.substr(pos, next - pos);
          bool letters =
              ascii ? IsAsciiLetters(piece) : IsLatinWord(icu::UnicodeString::fromUTF8(piece));
          EmitWord(std::move(piece), letters);
        }
        pos = next + 1;
      }
      return;
    }
    EmitWord(std::move(word), latin_letters);
  }

 private:
  const AnalyzerOptions& options_;
  ThreadResources& resources_;
  std::vector<std::string>* out_;
  std::vector<Span> parts_;  // Scratch for EmitIdentifier.
};

// Calls `on_word(start, end)` for each word of `text`. Used only if ICU could not create a
// break iterator (missing data): words are runs of letters, digits and '_'.
template <typename OnWord>
void FallbackWords(const icu::UnicodeString& text, OnWord on_word) {
  int32_t i = 0;
  const int32_t n = text.length();
  while (i < n) {
    UChar32 c = text.char32At(i);
    if (!u_isalnum(c) && c != '_') {
      i += U16_LENGTH(c);
      continue;
    }
    int32_t start = i;
    while (i < n) {
      c = text.char32At(i);
      if (!u_isalnum(c) && c != '_') break;
      i += U16_LENGTH(c);
    }
    on_word(start, i);
  }
}

}  // namespace

Analyzer::Analyzer(AnalyzerOptions options) : options_(options) {}

bool Analyzer::IsStopWord(std::string_view lower_case_word) {
  return StopWordSet().count(lower_case_word) != 0;
}

std::vector<std::string> Analyzer::Analyze(std::string_view utf8) const {
  std::vector<std::string> terms;
  if (utf8.empty()) return terms;
  // ICU indexes strings with int32_t. Callers cap payloads far below this; a cut in the middle
  // of a sequence just becomes U+FFFD.
  constexpr size_t kMaxInputBytes = size_t{1} << 30;
  if (utf8.size() > kMaxInputBytes) utf8 = utf8.substr(0, kMaxInputBytes);

  // fromUTF8 replaces ill-formed sequences with U+FFFD, which the breaker reports as a non-word.
  icu::UnicodeString raw = icu::UnicodeString::fromUTF8(
      icu::StringPiece(utf8.data(), static_cast<int32_t>(utf8.size())));
  // NFKC without case folding: identifier detection needs the original case ("getUserName").
  UErrorCode status = U_ZERO_ERROR;
  const icu::Normalizer2* nfkc = icu::Normalizer2::getNFKCInstance(status);
  icu::UnicodeString text;
  if (U_SUCCESS(status)) text = nfkc->normalize(raw, status);
  if (U_FAILURE(status)) text = std::move(raw);

  ThreadResources& resources = Resources();
  TermSink sink(options_, resources, &terms);

  std::vector<Span> idents;
  if (options_.split_identifiers) idents = FindIdentifiers(text);
  size_t next_ident = 0;  // First identifier not yet emitted.
  size_t live_ident = 0;  // First identifier that ends after the current word's start.
  const char16_t* buffer = text.getBuffer();

  // Words and identifiers come out in text order; a word overlapping an identifier is skipped
  // because the identifier already produced its parts.
  auto on_word = [&](int32_t start, int32_t end) {
    while (next_ident < idents.size() && idents[next_ident].start < end) {
      const Span& id = idents[next_ident++];
      sink.EmitIdentifier(buffer + id.start, id.end - id.start);
    }
    while (live_ident < idents.size() && idents[live_ident].end <= start) ++live_ident;
    if (live_ident < idents.size() && idents[live_ident].start < end) return;
    sink.EmitBrokenWord(text, start, end);
  };

  if (icu::BreakIterator* words = resources.words.get(); words != nullptr) {
    words->setText(text);
    int32_t start = words->first();
    for (int32_t end = words->next(); end != icu::BreakIterator::DONE;
         start = end, end = words->next()) {
      if (words->getRuleStatus() == UBRK_WORD_NONE) continue;  // Spaces, punctuation, symbols.
      on_word(start, end);
    }
    // The iterator keeps a pointer to `text`; detach it before `text` dies.
    words->setText(resources.empty);
  } else {
    FallbackWords(text, on_word);
  }
  while (next_ident < idents.size()) {
    const Span& id = idents[next_ident++];
    sink.EmitIdentifier(buffer + id.start, id.end - id.start);
  }
  return terms;
}

std::vector<std::string> Analyzer::AnalyzeQuery(std::string_view utf8) const {
  return Analyze(utf8);
}

}  // namespace engram
