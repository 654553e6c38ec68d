// RerankStage: applies an optional Reranker (extract/reranker.h) to the best results of a search,
// the same way for every API that has one (Leaderboard search, V4 memory search).
//
// The best `candidates` hits are offered; the reranker's ranked ones come first, the offered ones
// it left out follow in their order, everything after the offered block stays where it was. The
// block's scores are handed out again in decreasing order, so scores still decrease with rank and
// the set of scores (and any threshold already applied) is unchanged. A hit with an `explain`
// (core/search_explanation.h) records the rank it was offered at. A failing reranker never
// fails the search: the hits stay as they are, and the failure is counted and logged with its
// code and timing only (never text).
//
// Thread-safety: Apply is safe to call concurrently; Set must happen before the first Apply.
// Ownership: does not own the reranker.
#pragma once

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "extract/reranker.h"

namespace engram {

class RerankStage {
 public:
  // `name` labels log lines ("leaderboard search"). Without Set nothing is reranked.
  explicit RerankStage(std::string name) : name_(std::move(name)) {}

  void Set(const Reranker* reranker, size_t candidates) {
    reranker_ = reranker;
    candidates_ = candidates;
  }
  bool enabled() const { return reranker_ != nullptr; }

  // `text_of(hit)` is the text the reranker judges a hit by.
  template <typename Hit, typename TextOf>
  void Apply(const std::string& question, std::vector<Hit>* hits, TextOf text_of) {
    if (reranker_ == nullptr) return;
    const size_t n = std::min(candidates_, hits->size());
    if (n < 2) return;
    std::vector<std::string_view> texts;
    texts.reserve(n);
    for (size_t i = 0; i < n; ++i) texts.push_back(text_of((*hits)[i]));
    std::vector<size_t> order;
    if (!Order(question, texts, &order)) return;
    if constexpr (requires(Hit h) { h.explain->rank_before_rerank; }) {
      for (size_t i = 0; i < n; ++i) {
        if ((*hits)[i].explain) (*hits)[i].explain->rank_before_rerank = i + 1;
      }
    }
    std::vector<float> scores;
    scores.reserve(n);
    for (size_t i = 0; i < n; ++i) scores.push_back((*hits)[i].score);
    std::sort(scores.begin(), scores.end(), std::greater<float>());
    std::vector<bool> placed(n, false);
    std::vector<Hit> block;
    block.reserve(n);
    for (size_t i : order) {
      placed[i] = true;
      block.push_back(std::move((*hits)[i]));
    }
    for (size_t i = 0; i < n; ++i) {
      if (!placed[i]) block.push_back(std::move((*hits)[i]));
    }
    for (size_t i = 0; i < n; ++i) {
      block[i].score = scores[i];
      (*hits)[i] = std::move(block[i]);
    }
  }

  uint64_t calls() const { return calls_.load(); }
  uint64_t failures() const { return failures_.load(); }

 private:
  // Asks the reranker; false (counted, logged) when it has no usable opinion.
  bool Order(const std::string& question, const std::vector<std::string_view>& texts,
             std::vector<size_t>* order);

  const std::string name_;
  const Reranker* reranker_ = nullptr;
  size_t candidates_ = 30;
  std::atomic<uint64_t> calls_{0};
  std::atomic<uint64_t> failures_{0};
};

}  // namespace engram
