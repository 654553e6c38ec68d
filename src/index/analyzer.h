// Analyzer: turns UTF-8 text into index terms for the BM25 index.
//
// Pipeline (see analyzer.cc for the reasons behind each step):
//   1. UTF-8 -> UTF-16; invalid byte sequences become U+FFFD and are then dropped as non-words.
//   2. NFKC normalisation of the whole text (full-width "ＡＢＣ" -> "ABC"), case kept for step 3.
//   3. Code identifiers (`getUserName`, `snake_case`, `kebab-case`, `src/index/bm25.cc`,
//      `std::vector`, `os.path.join`, `2023-01-05`) are found on the NFKC text before the word
//      breaker splits them. Each yields its whole form (lower-cased, not stemmed) followed by its
//      parts (split on `_ . / : - @` and on case changes; stop-word filtered and stemmed).
//   4. Everything else goes through ICU's word BreakIterator (dictionary segmentation for Chinese
//      and Japanese); punctuation, spaces and symbols are dropped.
//   5. Each word is NFKC_Casefold-ed; English stop words are dropped; words made only of Latin
//      letters are stemmed with Snowball "english". Numbers ("2023", "3.5") and CJK words are kept
//      as they are.
//   6. Terms longer than `max_token_bytes` are dropped (they are almost always hashes, base64 or
//      minified code, and would only bloat the dictionary).
//
// Cost is linear in the input size.
//
// Thread-safety: an Analyzer is immutable after construction; all const methods may be called
// concurrently. ICU break iterators and Snowball stemmers are not thread-safe, so each thread
// lazily creates and keeps its own (thread_local), shared by all Analyzer instances.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace engram {

struct AnalyzerOptions {
  // Apply the Snowball English stemmer to words made only of Latin letters.
  bool stem = true;
  // Drop the English stop words listed in analyzer.cc (articles, pronouns, auxiliaries and
  // question words such as "what", "when", "how").
  bool remove_stopwords = true;
  // Emit code identifiers both whole and split into parts (see step 3 above). When false,
  // identifiers are only split by the ICU word breaker.
  bool split_identifiers = true;
  // Terms whose UTF-8 encoding is longer than this are dropped.
  size_t max_token_bytes = 64;
};

class Analyzer {
 public:
  explicit Analyzer(AnalyzerOptions options = {});

  // Index terms of `utf8` in text order, duplicates kept (their count is the term frequency).
  // Never fails: invalid UTF-8 is replaced and ignored.
  std::vector<std::string> Analyze(std::string_view utf8) const;

  // Terms of a search query. Identical to Analyze today; kept separate so that query-only
  // processing (e.g. synonyms, phrase handling) can be added without touching indexing.
  std::vector<std::string> AnalyzeQuery(std::string_view utf8) const;

  const AnalyzerOptions& options() const { return options_; }

  // True if `lower_case_word` is in the built-in English stop-word list.
  static bool IsStopWord(std::string_view lower_case_word);

 private:
  AnalyzerOptions options_;
};

}  // namespace engram
