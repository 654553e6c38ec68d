#include "index/fusion.h"

#include <algorithm>
#include <cmath>
#include <unordered_map>

namespace engram {

namespace {

void AddNormalised(const std::vector<ScoredDoc>& list, float weight,
                   std::unordered_map<DocId, float>& acc) {
  if (list.empty() || weight == 0) return;
  float hi = list.front().score, lo = list.front().score;
  for (const auto& s : list) {
    hi = std::max(hi, s.score);
    lo = std::min(lo, s.score);
  }
  const float span = hi - lo;
  for (const auto& s : list) {
    // A single candidate (or all equal) counts as a full match for this retriever.
    float norm = span > 0 ? (s.score - lo) / span : 1.0f;
    acc[s.doc] += weight * norm;
  }
}

// Standardises one retriever's scores over every document in the fused candidate set, documents
// it did not return counting as `fill` (BM25: 0, their true score; vectors: the lowest score
// returned, an upper bound of theirs). Measuring over the whole set matters: a retriever that
// returns a single match (or equal scores) still says that match stands out from the rest.
void AddStandardised(const std::vector<ScoredDoc>& list, float weight, float fill,
                     const std::unordered_map<DocId, float>& universe,
                     std::unordered_map<DocId, float>& acc) {
  if (list.empty() || weight == 0) return;
  std::unordered_map<DocId, float> own;
  own.reserve(list.size());
  for (const auto& s : list) own[s.doc] = s.score;
  double sum = 0, sq = 0;
  for (const auto& [doc, unused] : universe) {
    auto it = own.find(doc);
    double v = it == own.end() ? fill : it->second;
    sum += v;
    sq += v * v;
  }
  const double n = static_cast<double>(universe.size());
  const double mean = sum / n;
  const double sd = std::sqrt(std::max(0.0, sq / n - mean * mean));
  if (sd < 1e-9) return;  // the retriever cannot tell these documents apart
  for (const auto& [doc, unused] : universe) {
    auto it = own.find(doc);
    double v = it == own.end() ? fill : it->second;
    acc[doc] += weight * static_cast<float>((v - mean) / sd);
  }
}

// `floor`: the smallest best score the bonus is scaled by (z-scores may all be <= 0).
void AddPrior(const std::function<float(DocId)>* prior, float weight, float floor,
              std::unordered_map<DocId, float>& acc) {
  if (prior == nullptr || weight <= 0 || acc.empty()) return;
  float best = acc.begin()->second;
  for (const auto& [doc, score] : acc) best = std::max(best, score);
  const float scale = weight * std::max(best, floor);
  for (auto& [doc, score] : acc) {
    const float p = std::clamp((*prior)(doc), 0.0f, 1.0f);
    score += scale * p;
  }
}

}  // namespace

std::vector<ScoredDoc> Fuse(const std::vector<ScoredDoc>& bm25, const std::vector<ScoredDoc>& vec,
                            size_t k, const FusionOptions& options,
                            const std::function<float(DocId)>* prior) {
  std::unordered_map<DocId, float> acc;
  acc.reserve(bm25.size() + vec.size());
  const float wv = std::clamp(options.vector_weight, 0.0f, 1.0f);
  const float wb = 1.0f - wv;
  if (options.method == FusionMethod::kZScore) {
    for (const auto& s : bm25) acc.emplace(s.doc, 0.0f);
    for (const auto& s : vec) acc.emplace(s.doc, 0.0f);
    const std::unordered_map<DocId, float> universe = acc;
    float vec_min = 0;
    for (size_t i = 0; i < vec.size(); ++i) vec_min = i == 0 ? vec[i].score : std::min(vec_min, vec[i].score);
    AddStandardised(bm25, wb, 0.0f, universe, acc);
    AddStandardised(vec, wv, vec_min, universe, acc);
    AddPrior(prior, options.prior_weight, 1.0f, acc);
    for (auto& [doc, score] : acc) score = 1.0f / (1.0f + std::exp(-score));
  } else if (options.method == FusionMethod::kRrf) {
    for (size_t i = 0; i < bm25.size(); ++i) acc[bm25[i].doc] += wb / (options.rrf_k + i + 1);
    for (size_t i = 0; i < vec.size(); ++i) acc[vec[i].doc] += wv / (options.rrf_k + i + 1);
  } else {
    AddNormalised(bm25, wb, acc);
    AddNormalised(vec, wv, acc);
  }
  if (options.method != FusionMethod::kZScore) AddPrior(prior, options.prior_weight, 0.0f, acc);
  std::vector<ScoredDoc> out;
  out.reserve(acc.size());
  for (const auto& [doc, score] : acc) out.push_back({doc, score});
  KeepTopK(out, k);
  return out;
}

}  // namespace engram
