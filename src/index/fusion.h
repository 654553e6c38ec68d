// Fusion of ranked lists from different retrievers (BM25 and vectors) into one ranking.
//
// Two methods:
//  - kScoreSum: each list's scores are min-max normalised to 0..1 over its candidates, then summed
//    with weights (a document missing from a list gets 0 from it). Keeps score gaps, which matter:
//    a strong BM25 match should not be pulled down by a weak vector rank.
//  - kZScore: each list's scores are standardised ((s - mean) / stddev over its candidates), so a
//    score says how far a candidate stands out from the rest of that retriever's candidates; a
//    document missing from a list gets that list's lowest standardised score. The weighted sum is
//    mapped to 0..1 with a logistic. A retriever whose scores are flat (no candidate stands out)
//    thereby contributes little, whatever its raw scale: per-query confidence without tuning.
//  - kRrf: reciprocal-rank fusion, sum of w / (rrf_k + rank). Ignores scores entirely.
// Output scores are in 0..1 (kScoreSum, kZScore) so they can be shown to clients as relevance.
//
// Thread-safety: pure function.
#pragma once

#include <vector>

#include "index/bm25_index.h"

namespace engram {

enum class FusionMethod { kScoreSum, kZScore, kRrf };

struct FusionOptions {
  FusionMethod method = FusionMethod::kZScore;
  float vector_weight = 0.5f;  // BM25 gets 1 - vector_weight
  float rrf_k = 60.0f;
};

std::vector<ScoredDoc> Fuse(const std::vector<ScoredDoc>& bm25, const std::vector<ScoredDoc>& vec,
                            size_t k, const FusionOptions& options);

}  // namespace engram
