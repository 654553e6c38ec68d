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

// Adds weight * z-score for listed docs; returns the lowest z-score (the floor for absent docs).
float AddStandardised(const std::vector<ScoredDoc>& list, float weight,
                      std::unordered_map<DocId, float>& acc) {
  if (list.empty() || weight == 0) return 0;
  double sum = 0, sq = 0;
  for (const auto& s : list) {
    sum += s.score;
    sq += static_cast<double>(s.score) * s.score;
  }
  const double n = static_cast<double>(list.size());
  const double mean = sum / n;
  const double var = std::max(0.0, sq / n - mean * mean);
  const double sd = std::sqrt(var);
  float floor = 0;
  bool first = true;
  for (const auto& s : list) {
    float z = sd > 1e-9 ? static_cast<float>((s.score - mean) / sd) : 0.0f;
    acc[s.doc] += weight * z;
    floor = first ? z : std::min(floor, z);
    first = false;
  }
  return floor;
}

}  // namespace

std::vector<ScoredDoc> Fuse(const std::vector<ScoredDoc>& bm25, const std::vector<ScoredDoc>& vec,
                            size_t k, const FusionOptions& options) {
  std::unordered_map<DocId, float> acc;
  acc.reserve(bm25.size() + vec.size());
  const float wv = std::clamp(options.vector_weight, 0.0f, 1.0f);
  const float wb = 1.0f - wv;
  if (options.method == FusionMethod::kZScore) {
    std::unordered_map<DocId, float> in_bm25, in_vec;
    const float floor_b = AddStandardised(bm25, wb, in_bm25);
    const float floor_v = AddStandardised(vec, wv, in_vec);
    for (const auto& [doc, z] : in_bm25) acc[doc] += z;
    for (const auto& [doc, z] : in_vec) acc[doc] += z;
    for (auto& [doc, score] : acc) {
      if (!in_bm25.count(doc)) score += wb * floor_b;
      if (!in_vec.count(doc)) score += wv * floor_v;
      score = 1.0f / (1.0f + std::exp(-score));
    }
  } else if (options.method == FusionMethod::kRrf) {
    for (size_t i = 0; i < bm25.size(); ++i) acc[bm25[i].doc] += wb / (options.rrf_k + i + 1);
    for (size_t i = 0; i < vec.size(); ++i) acc[vec[i].doc] += wv / (options.rrf_k + i + 1);
  } else {
    AddNormalised(bm25, wb, acc);
    AddNormalised(vec, wv, acc);
  }
  std::vector<ScoredDoc> out;
  out.reserve(acc.size());
  for (const auto& [doc, score] : acc) out.push_back({doc, score});
  auto better = [](const ScoredDoc& a, const ScoredDoc& b) {
    return a.score > b.score || (a.score == b.score && a.doc < b.doc);
  };
  if (out.size() > k) {
    std::partial_sort(out.begin(), out.begin() + static_cast<long>(k), out.end(), better);
    out.resize(k);
  } else {
    std::sort(out.begin(), out.end(), better);
  }
  return out;
}

}  // namespace engram
