// ZipfVocabulary: synthetic words with a Zipfian (s = 1) frequency distribution, for benchmarks
// of the analyzer and the indexes. The most frequent ranks are caller-given words (real stop words,
// so the analyzer's stop-word work is realistic); the rest are random lower-case letter strings,
// some with inflections for the stemmer.
//
// Thread-safety: not thread-safe (drawing updates the distributions); one per thread.
#pragma once

#include <algorithm>
#include <cstddef>
#include <random>
#include <string>
#include <vector>

namespace engram {

struct ZipfVocabularyOptions {
  size_t size = 5000;             // words in all, head included
  std::vector<std::string> head;  // the most frequent ranks, in order
  int min_length = 3;             // letters of a generated word
  int max_length = 9;
  size_t ing_every = 0;  // every n-th generated word gets "ing" (0: none)
  size_t s_every = 0;    // every n-th generated word gets "s" (0: none)
};

class ZipfVocabulary {
 public:
  // Draws the generated words from `rng`, so a seeded generator gives the same vocabulary.
  ZipfVocabulary(const ZipfVocabularyOptions& options, std::mt19937_64& rng)
      : words_(options.head) {
    std::uniform_int_distribution<int> length(options.min_length, options.max_length);
    std::uniform_int_distribution<int> letter(0, 25);
    while (words_.size() < options.size) {
      std::string word;
      for (int i = length(rng); i > 0; --i) word.push_back(static_cast<char>('a' + letter(rng)));
      if (options.ing_every != 0 && words_.size() % options.ing_every == 0) word += "ing";
      if (options.s_every != 0 && words_.size() % options.s_every == 0) word += "s";
      words_.push_back(std::move(word));
    }
    std::vector<double> weights(words_.size());
    for (size_t r = 0; r < weights.size(); ++r) weights[r] = 1.0 / static_cast<double>(r + 1);
    any_ = std::discrete_distribution<size_t>(weights.begin(), weights.end());
    std::fill(weights.begin(), weights.begin() + static_cast<long>(options.head.size()), 0.0);
    content_ = std::discrete_distribution<size_t>(weights.begin(), weights.end());
  }

  // A word drawn by Zipf rank, head words included.
  const std::string& Any(std::mt19937_64& rng) { return words_[any_(rng)]; }
  // A word drawn by Zipf rank among the words after the head (what a query asks about).
  const std::string& Content(std::mt19937_64& rng) { return words_[content_(rng)]; }

 private:
  std::vector<std::string> words_;
  std::discrete_distribution<size_t> any_;
  std::discrete_distribution<size_t> content_;
};

}  // namespace engram
