// SearchExplanation: why a search result has its score, for searches that ask (`explain`). Every
// search API that offers it (V4 memories, knowledge bases, skills, the Leaderboard) fills it from
// the one hybrid search (index/hybrid_index.h), so the breakdown is the ranking's own arithmetic,
// not a reconstruction.
//
// Thread-safety: a value type.
#pragma once

#include <cstddef>
#include <optional>

#include "index/fusion.h"
#include "index/hybrid_index.h"

namespace engram {

struct SearchExplanation {
  FusionMethod method = FusionMethod::kZScore;
  // The result's fusion: each retriever's score and part, the prior, the factor. Absent when the
  // result was not fused itself (a conversation turn brought in beside a hit).
  std::optional<FusionParts> fusion;
  // The score after the domain's own steps (conversation neighbours, the question factor), before
  // a reranker; equal to fusion->score when none moved it.
  float ranked_score = 0;
  // The result's 1-based rank before a reranker reordered the head (absent: not reranked).
  std::optional<size_t> rank_before_rerank;
};

// The explanation of the result in `slot` of an explained search (`hits`, fused by `method`),
// ranked at `ranked_score`.
inline SearchExplanation Explain(const HybridHits& hits, DocId slot, FusionMethod method,
                                 float ranked_score) {
  SearchExplanation e;
  e.method = method;
  if (const FusionParts* parts = hits.PartsOf(slot)) e.fusion = *parts;
  e.ranked_score = ranked_score;
  return e;
}

}  // namespace engram
