// Fusion of ranked lists from different retrievers (BM25 and vectors) into one ranking.
//
// Two methods:
//  - kScoreSum: each list's scores are min-max normalised to 0..1 over its candidates, then summed
//    with weights (a document missing from a list gets 0 from it). Keeps score gaps, which matter:
//    a strong BM25 match should not be pulled down by a weak vector rank.
//  - kZScore: each retriever's scores are standardised ((s - mean) / stddev) over all fused
//    candidates, a document it did not return counting as 0 for BM25 (its true score) and as the
//    lowest returned score for vectors, whose stddev is taken as at least min_vector_spread. A
//    score then says how far a document stands out for this query in that retriever; the weighted
//    sum is mapped to 0..1 with a logistic. BM25 counts whatever its raw scale; the vectors'
//    floor is in cosine units, so cosines that barely differ contribute little (and when they
//    nearly tie, fused scores sit nearer 0.5, which a search's relevance threshold sees).
//  - kRrf: reciprocal-rank fusion, sum of w / (rrf_k + rank). Ignores scores entirely.
// Output scores are in 0..1 (kScoreSum, kZScore) so they can be shown to clients as relevance.
//
// Thread-safety: pure function.
#pragma once

#include <functional>
#include <optional>
#include <vector>

#include "index/bm25_index.h"

namespace engram {

enum class FusionMethod { kScoreSum, kZScore, kRrf };

// The method's name as `--fusion` spells it: "score", "zscore", "rrf".
const char* FusionMethodName(FusionMethod method);

struct FusionOptions {
  FusionMethod method = FusionMethod::kZScore;
  float vector_weight = 0.5f;  // BM25 gets 1 - vector_weight
  float rrf_k = 60.0f;
  // Weight of an optional prior (e.g. closeness to a date the query names): a candidate with
  // prior p in 0..1 gains prior_weight * p * (the best fused score), before the 0..1 mapping.
  // Relative to the best score, so it means the same for every query and method.
  float prior_weight = 0.0f;
  // kZScore: the smallest spread the vector scores are standardised by. Cosines of texts that
  // say nearly the same thing differ by a few hundredths; divided by their own tiny deviation,
  // such differences would become whole standard deviations and outweigh the words and the prior.
  // Differences well under this spread count for little.
  float min_vector_spread = 0.05f;
};

// How one fused document got its score (an explained search shows it). The parts add up: for
// kZScore, score = logistic(lexical_part + vector_part + prior_part) * scale; for kScoreSum and
// kRrf, score = (lexical_part + vector_part + prior_part) * scale.
struct FusionParts {
  DocId doc = 0;
  std::optional<float> lexical;  // the lexical retriever's score, when it returned the document
  std::optional<float> vector;   // the vector retriever's (the cosine), when it returned it
  float lexical_part = 0;        // what each retriever added to the fused sum
  float vector_part = 0;
  float prior = 0;  // the prior's 0..1 for the document (0 without a prior)
  float prior_part = 0;
  float scale = 1;  // the per-document factor (1 without one)
  float score = 0;  // the fused score
};

// `prior`, when set, maps a candidate to 0..1 (see FusionOptions::prior_weight); `scale`, when
// set, is a factor each candidate's final score is multiplied by before the top k are kept (a
// ranker's per-document adjustment, such as the question factor). Each is called once per
// candidate. `parts`, when set, receives the parts of every returned document, sorted by doc.
std::vector<ScoredDoc> Fuse(const std::vector<ScoredDoc>& bm25, const std::vector<ScoredDoc>& vec,
                            size_t k, const FusionOptions& options,
                            const std::function<float(DocId)>* prior = nullptr,
                            const std::function<float(DocId)>* scale = nullptr,
                            std::vector<FusionParts>* parts = nullptr);

// The parts of `doc` in `parts` (sorted by doc, as Fuse fills them), null when absent.
const FusionParts* FindParts(const std::vector<FusionParts>& parts, DocId doc);

}  // namespace engram
