// Bm25Index: an in-memory inverted index with BM25 ranking over caller-assigned dense doc ids.
//
// Layout (chosen for search latency and small per-doc memory):
//   - term dictionary: string -> dense term id; postings are a vector indexed by term id, each a
//     contiguous vector of {doc, tf} sorted by doc.
//   - per doc: its length (for length normalisation) and a slice of a flat "forward" array listing
//     its distinct term ids, so that Remove can update document frequencies at once.
//   - Remove marks the doc dead (tombstone); its postings are skipped by Search and physically
//     dropped by a compaction that runs when dead postings exceed a quarter of all postings.
//
// Scoring (classic Robertson/Sparck Jones BM25 with Lucene's always-positive idf):
//   idf(t)      = ln(1 + (N - df + 0.5) / (df + 0.5))
//   score(d, q) = sum over distinct t in q of idf(t) * tf * (k1 + 1) / (tf + K(d))
//   K(d)        = k1 * (1 - b + b * dl / avgdl)
// where N, df and avgdl count live documents only. Duplicate query terms count once: repeating a
// word in a query should not multiply its weight (agents often echo words).
//
// Thread-safety: not thread-safe. The owner (a shard) serialises writers against everything else
// with its own lock. Concurrent const calls (Search, Contains, ...) are safe when no writer runs;
// Search keeps its scratch space in thread_local storage.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace engram {

struct Bm25Options {
  float k1 = 1.2f;  // Term-frequency saturation.
  float b = 0.75f;  // Length normalisation strength (0 = none, 1 = full).
};

// Dense local id assigned by the caller (the shard). Scratch memory in Search is proportional to
// the largest id, so ids should be dense.
using DocId = uint32_t;

struct ScoredDoc {
  DocId doc;
  float score;
};

// Ranking order used by every retriever and by fusion: higher score first, then lower DocId, so
// results are deterministic.
// A function object rather than a function, so the sorts and heaps that take it inline the
// comparison (passed as a function pointer it was a call per comparison: ~5 % of a hybrid
// search's CPU).
struct RanksBeforeOrder {
  bool operator()(const ScoredDoc& a, const ScoredDoc& b) const {
    return a.score > b.score || (a.score == b.score && a.doc < b.doc);
  }
};
inline constexpr RanksBeforeOrder RanksBefore{};

// Sorts `docs` into ranking order and keeps the first k. RanksBefore is a total order when DocIds
// are unique and no score is NaN, so the result is the same whichever way it is found: a heap of k
// (partial_sort) when k is under a sixteenth of the list, else a selection of the k best and a
// sort of them, which there costs up to half as much (300 of 1,000: 20 instead of 41 us;
// BM_KeepTopK). Searches take the second way at each step, their candidate lists being a few
// times k (excerpts ask for top_k times an excerpt's turns, 200 at least).
inline void KeepTopK(std::vector<ScoredDoc>& docs, size_t k) {
  if (docs.size() > k) {
    if (k < docs.size() / 16) {
      std::partial_sort(docs.begin(), docs.begin() + static_cast<long>(k), docs.end(), RanksBefore);
      docs.resize(k);
      return;
    }
    if (k > 0) {
      std::nth_element(docs.begin(), docs.begin() + static_cast<long>(k - 1), docs.end(),
                       RanksBefore);
    }
    docs.resize(k);
  }
  std::sort(docs.begin(), docs.end(), RanksBefore);
}

// The statistics BM25 scores with (N, avgdl and each query term's df), counted over a part of
// the index: a search confined to one user's documents then ranks as if they were the whole
// collection, independent of what other users of the index wrote. From Bm25Index::StatsOver,
// valid until the index changes.
struct Bm25Stats {
  size_t docs = 0;
  uint64_t length_sum = 0;
  std::vector<std::pair<uint32_t, uint32_t>> df;  // (term id, docs containing it), by term id
};

class Bm25Index {
 public:
  explicit Bm25Index(Bm25Options options = {});

  Bm25Index(const Bm25Index&) = delete;
  Bm25Index& operator=(const Bm25Index&) = delete;
  Bm25Index(Bm25Index&&) = default;
  Bm25Index& operator=(Bm25Index&&) = default;

  // Indexes `doc` with its analysed terms (duplicates give the term frequency; the number of
  // terms is the doc length). Precondition: `doc` is not present. If it is, it is replaced.
  void Add(DocId doc, const std::vector<std::string>& terms);

  // Removes `doc`; a no-op if absent. N, df and avgdl reflect the removal immediately.
  void Remove(DocId doc);

  bool Contains(DocId doc) const;

  // The `k` best live docs by BM25 for `query_terms`, best first, ties broken by lower DocId.
  // Only docs containing at least one query term are returned (so fewer than k is possible).
  // `filter`, if not null, restricts the candidates: the result is the top-k among docs for which
  // (*filter)(doc) is true, however many better docs it rejects. It is called only for docs that
  // would enter the current top-k, at most once per doc, on the calling thread.
  // `stats`, if not null, replaces the whole index's statistics (see Bm25Stats).
  std::vector<ScoredDoc> Search(const std::vector<std::string>& query_terms, size_t k,
                                const std::function<bool(DocId)>* filter = nullptr,
                                const Bm25Stats* stats = nullptr) const;

  // The statistics of `query_terms` over the live docs among `docs` (duplicates count once).
  // Costs one pass over the query terms' postings and one over `docs`; nothing when no query term
  // is in the index (no score uses them then).
  Bm25Stats StatsOver(const std::vector<std::string>& query_terms,
                      const std::vector<DocId>& docs) const;

  // Per-term BM25 contributions, for rankers that combine terms across documents (e.g. a turn
  // and its neighbours in a conversation). Calls fn(term_index, doc, contribution) for every live
  // doc containing one of the distinct query terms; term_index numbers the distinct query terms
  // present in the index, 0..n-1, and n is returned. A doc's Search score is the sum of its
  // contributions.
  // A template so the per-posting call inlines (it runs once per posting of every query term).
  template <typename Fn>
  size_t ForEachContribution(const std::vector<std::string>& query_terms, Fn&& fn,
                             const Bm25Stats* stats = nullptr) const;

  // Number of live docs.
  size_t doc_count() const { return live_docs_; }

  // Number of distinct terms in the dictionary (includes terms only dead docs use until the
  // next compaction).
  size_t term_count() const { return postings_.size(); }

  // Approximate heap bytes owned by the index (excludes Search's per-thread scratch).
  size_t MemoryBytes() const;

 private:
  struct Posting {
    DocId doc;
    uint32_t tf;
  };
  struct PostingList {
    std::vector<Posting> entries;  // Sorted by doc; may include dead docs until compaction.
    uint32_t live_df = 0;          // Live docs containing the term.
  };
  enum class DocState : uint8_t { kAbsent, kLive, kDead };
  struct DocMeta {
    uint32_t forward_offset = 0;  // Slice of forward_ with the doc's distinct term ids.
    uint32_t forward_count = 0;
    DocState state = DocState::kAbsent;
  };
  // Heterogeneous lookup so that Search can probe with string_view without copying.
  struct TermHash {
    using is_transparent = void;
    size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
  };

  // Ids of the distinct query terms that have live postings, sorted.
  std::vector<uint32_t> DistinctLiveTermIds(const std::vector<std::string>& query_terms) const;
  // N and avgdl of the index, or of `stats` when given.
  void Collection(const Bm25Stats* stats, float* n, float* avgdl) const {
    // In float, as the scores always were: the same inputs give the same scores to the bit.
    *n = static_cast<float>(stats ? stats->docs : live_docs_);
    const float sum = static_cast<float>(stats ? stats->length_sum : live_length_sum_);
    *avgdl = *n > 0 ? std::max(1.0f, sum / *n) : 1.0f;
  }
  // A term's df in the index, or in `stats` when given.
  static float DocFrequency(const PostingList& list, uint32_t id, const Bm25Stats* stats) {
    if (stats == nullptr) return static_cast<float>(list.live_df);
    auto it =
        std::lower_bound(stats->df.begin(), stats->df.end(), std::pair<uint32_t, uint32_t>(id, 0));
    return it != stats->df.end() && it->first == id ? static_cast<float>(it->second) : 0.0f;
  }
  void EnsureDocSlot(DocId doc);
  // Drops the postings of a dead doc right away (used when a dead id is added again).
  void PurgeDead(DocId doc);
  void MaybeCompact();
  // Drops dead postings, unused terms and dead forward slices; renumbers term ids.
  void Compact();

  Bm25Options options_;
  std::unordered_map<std::string, uint32_t, TermHash, std::equal_to<>> dictionary_;
  std::vector<PostingList> postings_;  // Indexed by term id.
  std::vector<uint32_t> doc_length_;   // Indexed by DocId; number of terms.
  std::vector<DocMeta> doc_meta_;      // Indexed by DocId.
  std::vector<uint32_t> forward_;      // Distinct term ids per doc, see DocMeta. Offsets are
                                       // 32-bit: at most 2^32 postings per index.
  size_t live_docs_ = 0;
  uint64_t live_length_sum_ = 0;  // Sum of live doc lengths, for avgdl.
  size_t live_postings_ = 0;
  size_t dead_postings_ = 0;
  size_t dead_forward_ = 0;  // forward_ entries of dead or replaced docs.
};

template <typename Fn>
size_t Bm25Index::ForEachContribution(const std::vector<std::string>& query_terms, Fn&& fn,
                                      const Bm25Stats* stats) const {
  const std::vector<uint32_t> ids = DistinctLiveTermIds(query_terms);
  if (ids.empty()) return 0;
  float n = 0, avgdl = 1;
  Collection(stats, &n, &avgdl);
  const float k1 = options_.k1;
  const float norm_base = k1 * (1.0f - options_.b);
  const float norm_per_len = k1 * options_.b / avgdl;
  for (size_t t = 0; t < ids.size(); ++t) {
    const PostingList& list = postings_[ids[t]];
    const float df = DocFrequency(list, ids[t], stats);
    const float weight = std::log(1.0f + (n - df + 0.5f) / (df + 0.5f)) * (k1 + 1.0f);
    for (const Posting& p : list.entries) {
      if (doc_meta_[p.doc].state != DocState::kLive) continue;
      const float tf = static_cast<float>(p.tf);
      fn(t, p.doc,
         weight * tf / (tf + norm_base + norm_per_len * static_cast<float>(doc_length_[p.doc])));
    }
  }
  return ids.size();
}

}  // namespace engram
