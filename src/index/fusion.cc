#include "index/fusion.h"

#include <algorithm>
#include <cmath>

#include "index/doc_set.h"

namespace engram {

namespace {

void AddNormalised(const std::vector<ScoredDoc>& list, float weight, const DocSet& candidates,
                   std::vector<float>& acc) {
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
    acc[candidates.rank(s.doc)] += weight * norm;
  }
}

// Standardises one retriever's scores over every document in the fused candidate set, documents
// it did not return counting as `fill` (BM25: 0, their true score; vectors: the lowest score
// returned, an upper bound of theirs). Measuring over the whole set matters: a retriever that
// returns a single match (or equal scores) still says that match stands out from the rest. The
// deviation is taken as at least `min_sd` (FusionOptions::min_vector_spread).
void AddStandardised(const std::vector<ScoredDoc>& list, float weight, float fill, double min_sd,
                     const DocSet& candidates, std::vector<float>& acc) {
  if (list.empty() || weight == 0) return;
  std::vector<double> own(candidates.size(), fill);
  for (const auto& s : list) own[candidates.rank(s.doc)] = s.score;
  double sum = 0, sq = 0;
  for (double v : own) {
    sum += v;
    sq += v * v;
  }
  const double n = static_cast<double>(own.size());
  const double mean = sum / n;
  const double sd = std::sqrt(std::max(0.0, sq / n - mean * mean));
  if (sd < 1e-9) return;  // the retriever cannot tell these documents apart
  const double spread = std::max(sd, min_sd);
  for (size_t i = 0; i < own.size(); ++i)
    acc[i] += weight * static_cast<float>((own[i] - mean) / spread);
}

// `floor`: the smallest best score the bonus is scaled by (z-scores may all be <= 0); `fused` the
// retrievers' sums so far. `values`, when set, receives each candidate's prior.
void AddPrior(const std::function<float(DocId)>* prior, float weight, float floor,
              const std::vector<float>& fused, const DocSet& candidates, std::vector<float>& acc,
              std::vector<float>* values) {
  if (prior == nullptr || weight <= 0 || fused.empty()) return;
  const float best = *std::max_element(fused.begin(), fused.end());
  const float scale = weight * std::max(best, floor);
  for (size_t i = 0; i < acc.size(); ++i) {
    const float p = std::clamp((*prior)(candidates.id(i)), 0.0f, 1.0f);
    acc[i] += scale * p;
    if (values != nullptr) (*values)[i] = p;
  }
}

// `doc`'s entry in `parts` (sorted by doc), null when absent; const or not, as `parts` is.
template <typename Parts>
auto* PartsIn(Parts& parts, DocId doc) {
  auto it = std::lower_bound(parts.begin(), parts.end(), doc,
                             [](const FusionParts& p, DocId d) { return p.doc < d; });
  return it != parts.end() && it->doc == doc ? &*it : nullptr;
}

// The explained candidates: each retriever's contribution kept apart, added up only at the end
// (in the order an unexplained fusion adds them, so the scores are the same to the bit).
struct Explained {
  explicit Explained(size_t n) : lexical(n), vector(n), prior(n), prior_value(n), scale(n, 1.0f) {}
  std::vector<float> lexical, vector, prior, prior_value, scale;
};

// The parts of the documents in `out`, sorted by doc.
std::vector<FusionParts> PartsOf(const std::vector<ScoredDoc>& out, const Explained& e,
                                 const DocSet& candidates, const std::vector<ScoredDoc>& bm25,
                                 const std::vector<ScoredDoc>& vec) {
  std::vector<FusionParts> parts;
  parts.reserve(out.size());
  for (const ScoredDoc& s : out) {
    const size_t i = candidates.rank(s.doc);
    FusionParts p;
    p.doc = s.doc;
    p.lexical_part = e.lexical[i];
    p.vector_part = e.vector[i];
    p.prior = e.prior_value[i];
    p.prior_part = e.prior[i];
    p.scale = e.scale[i];
    p.score = s.score;
    parts.push_back(p);
  }
  std::sort(parts.begin(), parts.end(),
            [](const FusionParts& a, const FusionParts& b) { return a.doc < b.doc; });
  for (const ScoredDoc& s : bm25) {
    if (FusionParts* p = PartsIn(parts, s.doc)) p->lexical = s.score;
  }
  for (const ScoredDoc& s : vec) {
    if (FusionParts* p = PartsIn(parts, s.doc)) p->vector = s.score;
  }
  return parts;
}

}  // namespace

std::vector<ScoredDoc> Fuse(const std::vector<ScoredDoc>& bm25, const std::vector<ScoredDoc>& vec,
                            size_t k, const FusionOptions& options,
                            const std::function<float(DocId)>* prior,
                            const std::function<float(DocId)>* scale,
                            std::vector<FusionParts>* parts) {
  const float wv = std::clamp(options.vector_weight, 0.0f, 1.0f);
  const float wb = 1.0f - wv;
  // Score sums leave out a list with no weight (its documents are not candidates); z-scores and
  // reciprocal ranks take every returned document.
  const bool score_sum = options.method == FusionMethod::kScoreSum;
  // The fused candidates: the distinct documents of the lists, in DocId order, one slot each
  // (its rank). Flat arrays instead of hash maps: a search fuses hundreds to a few thousand
  // candidates, and the maps' allocations and hashing were ~4 % of a hybrid search's CPU.
  DocSet candidates;
  if (!score_sum || wb != 0) candidates.Add(bm25);
  if (!score_sum || wv != 0) candidates.Add(vec);
  candidates.Seal();
  std::vector<float> acc(candidates.size(), 0.0f);
  // Unexplained, every contribution goes straight into acc.
  std::optional<Explained> explained;
  if (parts != nullptr) explained.emplace(candidates.size());
  std::vector<float>& lexical = explained ? explained->lexical : acc;
  std::vector<float>& semantic = explained ? explained->vector : acc;
  std::vector<float>& prior_acc = explained ? explained->prior : acc;
  std::vector<float>* prior_values = explained ? &explained->prior_value : nullptr;
  const auto sum_retrievers = [&] {
    if (!explained) return;
    for (size_t i = 0; i < acc.size(); ++i) acc[i] = lexical[i] + semantic[i];
  };
  const auto add_prior = [&](float floor) {
    sum_retrievers();
    AddPrior(prior, options.prior_weight, floor, acc, candidates, prior_acc, prior_values);
    if (!explained) return;
    for (size_t i = 0; i < acc.size(); ++i) acc[i] += prior_acc[i];
  };
  if (options.method == FusionMethod::kZScore) {
    float vec_min = 0;
    for (size_t i = 0; i < vec.size(); ++i)
      vec_min = i == 0 ? vec[i].score : std::min(vec_min, vec[i].score);
    AddStandardised(bm25, wb, 0.0f, 0.0, candidates, lexical);
    AddStandardised(vec, wv, vec_min, options.min_vector_spread, candidates, semantic);
    add_prior(1.0f);
    for (float& score : acc) score = 1.0f / (1.0f + std::exp(-score));
  } else if (options.method == FusionMethod::kRrf) {
    for (size_t i = 0; i < bm25.size(); ++i)
      lexical[candidates.rank(bm25[i].doc)] += wb / (options.rrf_k + i + 1);
    for (size_t i = 0; i < vec.size(); ++i)
      semantic[candidates.rank(vec[i].doc)] += wv / (options.rrf_k + i + 1);
    add_prior(0.0f);
  } else {
    AddNormalised(bm25, wb, candidates, lexical);
    AddNormalised(vec, wv, candidates, semantic);
    add_prior(0.0f);
  }
  if (scale != nullptr) {
    for (size_t i = 0; i < acc.size(); ++i) {
      const float factor = (*scale)(candidates.id(i));
      acc[i] *= factor;
      if (explained) explained->scale[i] = factor;
    }
  }
  std::vector<ScoredDoc> out;
  out.reserve(acc.size());
  for (size_t i = 0; i < acc.size(); ++i) out.push_back({candidates.id(i), acc[i]});
  KeepTopK(out, k);
  if (parts != nullptr) *parts = PartsOf(out, *explained, candidates, bm25, vec);
  return out;
}

const char* FusionMethodName(FusionMethod method) {
  switch (method) {
    case FusionMethod::kScoreSum:
      return "score";
    case FusionMethod::kRrf:
      return "rrf";
    case FusionMethod::kZScore:
      break;
  }
  return "zscore";
}

const FusionParts* FindParts(const std::vector<FusionParts>& parts, DocId doc) {
  return PartsIn(parts, doc);
}

}  // namespace engram
