// Property tests: random add/remove/re-add sequences checked against a brute-force BM25 model,
// and the analyzer's output invariants on arbitrary bytes.
#include <gtest/gtest.h>
#include <rapidcheck.h>
#include <rapidcheck/gtest.h>
#include <unicode/utf8.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "index/analyzer.h"
#include "index/bm25_index.h"

namespace engram {
namespace {

// Brute-force BM25 over the live docs, with the formula from bm25_index.h, in double.
std::map<DocId, double> ReferenceScores(const std::map<DocId, std::vector<std::string>>& docs,
                                        const std::vector<std::string>& query) {
  std::map<DocId, double> scores;
  if (docs.empty()) return scores;
  const double n = static_cast<double>(docs.size());
  double total = 0;
  for (const auto& [doc, terms] : docs) total += static_cast<double>(terms.size());
  const double avgdl = std::max(1.0, total / n);
  std::set<std::string> distinct(query.begin(), query.end());
  for (const std::string& q : distinct) {
    double df = 0;
    for (const auto& [doc, terms] : docs) df += std::count(terms.begin(), terms.end(), q) > 0;
    if (df == 0) continue;
    const double idf = std::log(1 + (n - df + 0.5) / (df + 0.5));
    for (const auto& [doc, terms] : docs) {
      const double tf = static_cast<double>(std::count(terms.begin(), terms.end(), q));
      if (tf == 0) continue;
      const double dl = static_cast<double>(terms.size());
      scores[doc] += idf * tf * 2.2 / (tf + 1.2 * (0.25 + 0.75 * dl / avgdl));
    }
  }
  return scores;
}

std::string RandomTerm(int vocab) { return "t" + std::to_string(*rc::gen::inRange(0, vocab)); }

RC_GTEST_PROP(Bm25IndexProperty, SearchIsSortedCompleteAndNeverReturnsRemovedDocs, ()) {
  const int vocab = *rc::gen::inRange(1, 12);
  const int ops = *rc::gen::inRange(0, 80);
  Bm25Index index;
  std::map<DocId, std::vector<std::string>> model;
  std::set<DocId> removed;
  for (int i = 0; i < ops; ++i) {
    const DocId doc = *rc::gen::inRange<DocId>(0, 40);
    if (*rc::gen::inRange(0, 3) != 0) {
      std::vector<std::string> terms(static_cast<size_t>(*rc::gen::inRange(0, 8)));
      for (std::string& term : terms) term = RandomTerm(vocab);
      index.Add(doc, terms);
      model[doc] = terms;
      removed.erase(doc);
    } else {
      index.Remove(doc);
      if (model.erase(doc) != 0) removed.insert(doc);
    }
  }
  RC_ASSERT(index.doc_count() == model.size());

  for (int q = 0; q < 5; ++q) {
    std::vector<std::string> query(static_cast<size_t>(*rc::gen::inRange(0, 5)));
    for (std::string& term : query) term = RandomTerm(vocab + 2);  // Some are unknown.
    const size_t k = *rc::gen::inRange<size_t>(1, 15);
    const DocId modulus = *rc::gen::inRange<DocId>(1, 4);
    std::function<bool(DocId)> filter = [modulus](DocId d) { return d % modulus == 0; };
    const std::vector<ScoredDoc> results = index.Search(query, k, &filter);

    std::map<DocId, double> reference = ReferenceScores(model, query);
    std::erase_if(reference, [modulus](const auto& entry) { return entry.first % modulus != 0; });
    RC_ASSERT(results.size() == std::min(k, reference.size()));

    std::set<DocId> returned;
    for (size_t i = 0; i < results.size(); ++i) {
      const ScoredDoc& r = results[i];
      RC_ASSERT(removed.count(r.doc) == 0);
      RC_ASSERT(reference.count(r.doc) == 1);
      RC_ASSERT(std::abs(r.score - reference[r.doc]) <= 1e-4 * std::max(1.0, reference[r.doc]));
      RC_ASSERT(returned.insert(r.doc).second);
      if (i > 0) {
        const ScoredDoc& prev = results[i - 1];
        RC_ASSERT(prev.score > r.score || (prev.score == r.score && prev.doc < r.doc));
      }
    }
    // Completeness: no eligible doc left out scores clearly better than the last one returned.
    if (!results.empty()) {
      for (const auto& [doc, score] : reference) {
        if (returned.count(doc) == 0) RC_ASSERT(score <= results.back().score + 1e-4);
      }
    }
  }
}

bool IsValidUtf8(const std::string& s) {
  const auto* p = reinterpret_cast<const uint8_t*>(s.data());
  const int32_t n = static_cast<int32_t>(s.size());
  for (int32_t i = 0; i < n;) {
    UChar32 c;
    U8_NEXT(p, i, n, c);
    if (c < 0) return false;
  }
  return true;
}

RC_GTEST_PROP(AnalyzerProperty, TermsAreBoundedValidUtf8, ()) {
  // Bytes biased towards identifier punctuation, case changes and multi-byte sequences.
  const std::string alphabet = "aZ9_./:-@ \t'\xc3\xa9\xe5\x92\x96\xe5\x95\xa1\xff\x80Q";
  const auto picks =
      *rc::gen::container<std::vector<size_t>>(rc::gen::inRange<size_t>(0, alphabet.size()));
  std::string text;
  for (size_t i : picks) text.push_back(alphabet[i]);
  text += *rc::gen::arbitrary<std::string>();
  AnalyzerOptions options;
  options.max_token_bytes = *rc::gen::inRange<size_t>(1, 70);
  for (const std::string& term : Analyzer(options).Analyze(text)) {
    RC_ASSERT(!term.empty());
    RC_ASSERT(term.size() <= options.max_token_bytes);
    RC_ASSERT(IsValidUtf8(term));
  }
}

}  // namespace
}  // namespace engram
