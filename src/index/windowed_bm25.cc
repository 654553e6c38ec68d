#include "index/windowed_bm25.h"

#include <algorithm>
#include <functional>

namespace engram {

std::vector<ScoredDoc> WindowedBm25(const Bm25Index& bm25, const TurnOrder& order,
                                    size_t slot_count, const std::vector<std::string>& terms,
                                    size_t k, float share, const WindowFilter& filter,
                                    const Bm25Stats* stats) {
  constexpr DocId kNoDoc = TurnOrder::kNone;
  if (k == 0) return {};
  // Per-thread scratch reused across searches (reset after use), so a search costs what its
  // terms' postings cost, not the scope's size: each doc's own BM25 total, the docs touched,
  // each doc's row in `contrib` (kNoDoc = none) and per row its per-term contributions.
  thread_local std::vector<float> total;
  thread_local std::vector<DocId> touched;
  thread_local std::vector<uint32_t> row_of_doc;
  thread_local std::vector<DocId> doc_of_row;
  thread_local std::vector<float> contrib;
  thread_local std::vector<float> sorted_totals;
  thread_local std::vector<ScoredDoc> order_scratch;
  if (total.size() < slot_count) total.resize(slot_count, 0.0f);
  if (row_of_doc.size() < slot_count) row_of_doc.resize(slot_count, kNoDoc);
  touched.clear();
  doc_of_row.clear();

  // Pass 1: own totals (plain BM25 scores).
  const std::function<bool(DocId)>* in_scope = filter.in_scope;
  const std::function<bool(DocId)>* admits = filter.admits;
  const size_t n_terms = bm25.ForEachContribution(
      terms,
      [&](size_t, DocId doc, float c) {
        if (in_scope != nullptr && !(*in_scope)(doc)) return;
        if (total[doc] == 0.0f) touched.push_back(doc);
        total[doc] += c;
      },
      stats);
  if (touched.empty()) return {};
  auto total_of = [&](DocId d) { return d == kNoDoc ? 0.0f : total[d]; };

  // A turn's window score lies between its own total and its own total plus `share` of each
  // neighbour's total, so the k-th best own total is a floor for the k-th best window score:
  // only turns whose upper bound reaches it (usually few) need the per-term pass. Candidates are
  // the matching turns and the turns next to them (which may match through them).
  // With a filter, the floor is the k-th best own total among admitted turns, found by asking
  // the filter in descending order of total until k say yes.
  float floor = 0.0f;
  if (admits != nullptr && touched.size() > k) {
    order_scratch.clear();
    for (DocId d : touched) order_scratch.push_back({d, total[d]});
    std::sort(order_scratch.begin(), order_scratch.end(), RanksBefore);
    size_t admitted = 0;
    for (const ScoredDoc& s : order_scratch) {
      if (!(*admits)(s.doc)) continue;
      if (++admitted == k) {
        floor = s.score;
        break;
      }
    }
  } else if (touched.size() > k) {
    sorted_totals.clear();
    for (DocId d : touched) sorted_totals.push_back(total[d]);
    std::nth_element(sorted_totals.begin(), sorted_totals.begin() + static_cast<long>(k - 1),
                     sorted_totals.end(), std::greater<float>());
    floor = sorted_totals[k - 1];
  }
  auto add_row = [&](DocId d) {
    if (d == kNoDoc || row_of_doc[d] != kNoDoc) return;
    row_of_doc[d] = static_cast<uint32_t>(doc_of_row.size());
    doc_of_row.push_back(d);
  };
  auto consider = [&](DocId d) {
    if (d == kNoDoc || row_of_doc[d] != kNoDoc) return;
    const float bound = total[d] + share * (total_of(order.prev(d)) + total_of(order.next(d)));
    if (bound < floor || (admits != nullptr && !(*admits)(d))) return;
    add_row(d);  // the window needs the neighbours' per-term scores too
    add_row(order.prev(d));
    add_row(order.next(d));
  };
  const size_t n_touched = touched.size();
  for (size_t i = 0; i < n_touched; ++i) {
    const DocId d = touched[i];
    consider(d);
    consider(order.prev(d));
    consider(order.next(d));
  }

  // Pass 2: per-term contributions of the rows.
  contrib.assign(doc_of_row.size() * n_terms, 0.0f);
  bm25.ForEachContribution(
      terms,
      [&](size_t t, DocId doc, float c) {
        if (row_of_doc[doc] != kNoDoc) contrib[row_of_doc[doc] * n_terms + t] = c;
      },
      stats);
  auto row_of = [&](DocId d) { return d == kNoDoc ? kNoDoc : row_of_doc[d]; };
  std::vector<ScoredDoc> scored;
  scored.reserve(doc_of_row.size());
  for (uint32_t r = 0; r < doc_of_row.size(); ++r) {
    const DocId d = doc_of_row[r];
    const float bound = total[d] + share * (total_of(order.prev(d)) + total_of(order.next(d)));
    if (bound < floor) continue;  // a row only because it neighbours a candidate
    if (admits != nullptr && !(*admits)(d)) continue;  // likewise (the filter rejects it)
    const uint32_t before = row_of(order.prev(d));
    const uint32_t after = row_of(order.next(d));
    const float* own = &contrib[r * n_terms];
    const float* b = before != kNoDoc ? &contrib[before * n_terms] : nullptr;
    const float* a = after != kNoDoc ? &contrib[after * n_terms] : nullptr;
    float score = 0;
    for (size_t t = 0; t < n_terms; ++t) {
      float best = own[t];
      if (b != nullptr) best = std::max(best, share * b[t]);
      if (a != nullptr) best = std::max(best, share * a[t]);
      score += best;
    }
    if (score > 0) scored.push_back({d, score});
  }
  for (DocId d : touched) total[d] = 0.0f;
  for (DocId d : doc_of_row) row_of_doc[d] = kNoDoc;
  KeepTopK(scored, k);
  return scored;
}

}  // namespace engram
