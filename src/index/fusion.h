// Fusion of ranked lists from different retrievers (BM25 and vectors) into one ranking.
//
// Two methods:
//  - kScoreSum: each list's scores are min-max normalised to 0..1 over its candidates, then summed
//    with weights (a document missing from a list gets 0 from it). Keeps score gaps, which matter:
//    a strong BM25 match should not be pulled down by a weak vector rank.
//  - kZScore: each retriever's scores are standardised ((s - mean) / stddev) over all fused
//    candidates, a document it did not return counting as 0 for BM25 (its true score) and as the
//    lowest returned score for vectors. A score then says how far a document stands out for this
//    query in that retriever; the weighted sum is mapped to 0..1 with a logistic. A retriever whose
//    scores are flat contributes little, whatever its raw scale: per-query confidence, untuned.
//  - kRrf: reciprocal-rank fusion, sum of w / (rrf_k + rank). Ignores scores entirely.
// Output scores are in 0..1 (kScoreSum, kZScore) so they can be shown to clients as relevance.
//
// Thread-safety: pure function.
#pragma once

#include <functional>
#include <vector>

#include "index/bm25_index.h"

namespace engram {

enum class FusionMethod { kScoreSum, kZScore, kRrf };

struct FusionOptions {
  FusionMethod method = FusionMethod::kZScore;
  float vector_weight = 0.5f;  // BM25 gets 1 - vector_weight
  float rrf_k = 60.0f;
  // Weight of an optional prior (e.g. closeness to a date the query names): a candidate with
  // prior p in 0..1 gains prior_weight * p * (the best fused score), before the 0..1 mapping.
  // Relative to the best score, so it means the same for every query and method.
  float prior_weight = 0.0f;
};

// `prior`, when set, maps a candidate to 0..1 (see FusionOptions::prior_weight); `scale`, when
// set, is a factor each candidate's final score is multiplied by before the top k are kept (a
// ranker's per-document adjustment, such as the question factor). Each is called once per
// candidate.
std::vector<ScoredDoc> Fuse(const std::vector<ScoredDoc>& bm25, const std::vector<ScoredDoc>& vec,
                            size_t k, const FusionOptions& options,
                            const std::function<float(DocId)>* prior = nullptr,
                            const std::function<float(DocId)>* scale = nullptr);

}  // namespace engram
