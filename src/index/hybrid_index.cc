#include "index/hybrid_index.h"

#include <algorithm>

#include "common/memory_bytes.h"
#include "index/doc_set.h"

namespace engram {

namespace {

constexpr int64_t kNoSeq = INT64_MIN;

}  // namespace

std::optional<float> HybridHits::CosineOf(DocId doc) const {
  auto c = std::lower_bound(cosines.begin(), cosines.end(), doc,
                            [](const ScoredDoc& a, DocId d) { return a.doc < d; });
  if (c == cosines.end() || c->doc != doc) return std::nullopt;
  return c->score;
}

HybridIndex::HybridIndex(HybridIndexOptions options)
    : options_(std::move(options)), bm25_(options_.bm25), vectors_(options_.vectors) {}

DocId HybridIndex::NewSlot() {
  if (options_.reuse_slots && !free_.empty()) {
    const DocId d = free_.back();
    free_.pop_back();
    return d;
  }
  const auto d = static_cast<DocId>(live_.size());
  live_.push_back(0);
  seq_of_.push_back(kNoSeq);
  key_of_.push_back(nullptr);
  return d;
}

void HybridIndex::IndexLocked(DocId d, const HybridDoc& doc, MissingVector missing) {
  if (!live_[d]) {
    live_[d] = 1;
    ++live_count_;
  }
  if (seq_of_[d] != kNoSeq && (!doc.seq || *doc.seq != seq_of_[d])) {
    by_seq_.erase(seq_of_[d]);
    seq_of_[d] = kNoSeq;
  }
  if (doc.seq) {
    seq_of_[d] = *doc.seq;
    by_seq_[*doc.seq] = d;
  }
  static const std::vector<std::string> kNoTerms;
  bm25_.Add(d, doc.terms != nullptr ? *doc.terms : kNoTerms);
  if (Accepts(doc.vector_model, doc.vector.size())) {
    vectors_.Set(d, doc.vector.data());
  } else if (missing == MissingVector::kClear) {
    vectors_.Remove(d);
  }
}

DocId HybridIndex::Add(const HybridDoc& doc) {
  const DocId d = NewSlot();
  IndexLocked(d, doc, MissingVector::kClear);
  return d;
}

DocId HybridIndex::Upsert(std::string_view key, const HybridDoc& doc, MissingVector missing,
                          bool* inserted) {
  auto it = by_key_.find(key);
  const bool fresh = it == by_key_.end();
  if (inserted != nullptr) *inserted = fresh;
  if (!fresh) {
    IndexLocked(it->second, doc, missing);
    return it->second;
  }
  const DocId d = NewSlot();
  auto [entry, unused] = by_key_.emplace(std::string(key), d);
  key_of_[d] = &entry->first;
  IndexLocked(d, doc, MissingVector::kClear);
  return d;
}

std::optional<DocId> HybridIndex::Remove(std::string_view key) {
  auto it = by_key_.find(key);
  if (it == by_key_.end()) return std::nullopt;
  const DocId d = it->second;
  RemoveSlot(d);
  return d;
}

void HybridIndex::RemoveSlot(DocId d) {
  if (!live(d)) return;
  bm25_.Remove(d);
  vectors_.Remove(d);
  if (seq_of_[d] != kNoSeq) {
    by_seq_.erase(seq_of_[d]);
    seq_of_[d] = kNoSeq;
  }
  if (key_of_[d] != nullptr) {
    const std::string* key = key_of_[d];
    key_of_[d] = nullptr;
    by_key_.erase(*key);
  }
  live_[d] = 0;
  --live_count_;
  if (options_.reuse_slots) free_.push_back(d);
}

std::optional<DocId> HybridIndex::Find(std::string_view key) const {
  auto it = by_key_.find(key);
  if (it == by_key_.end()) return std::nullopt;
  return it->second;
}

std::optional<DocId> HybridIndex::FindSeq(int64_t seq) const {
  auto it = by_seq_.find(seq);
  if (it == by_seq_.end()) return std::nullopt;
  return it->second;
}

bool HybridIndex::Accepts(std::string_view model, size_t dim) const {
  return dim > 0 && model == options_.vector_model && static_cast<int>(dim) == vectors_.dim();
}

bool HybridIndex::SetVector(DocId d, std::string_view model, std::span<const float> vector) {
  if (!live(d) || !Accepts(model, vector.size())) return false;
  vectors_.Set(d, vector.data());
  return true;
}

namespace {

// Keeps the results of `ranked` that are in `lexical` or whose cosine in `semantic` is at least
// `floor`, in their order.
void DropWithoutEvidence(const std::vector<ScoredDoc>& lexical,
                         const std::vector<ScoredDoc>& semantic, float floor,
                         std::vector<ScoredDoc>& ranked) {
  DocSet evidence;
  evidence.Add(lexical);
  for (const ScoredDoc& s : semantic) {
    if (s.score >= floor) evidence.Add(s.doc);
  }
  evidence.Seal();
  std::erase_if(ranked, [&](const ScoredDoc& s) { return !evidence.contains(s.doc); });
}

}  // namespace

HybridHits HybridIndex::Search(const HybridQuery& q) const {
  HybridHits hits;
  if (q.k == 0 || (q.among != nullptr && q.among->empty())) return hits;
  const size_t per_retriever = std::max(q.k, q.candidates);

  // BM25 scans the postings of the whole index: membership of `among` is a table lookup, from
  // per-thread scratch that is reset after use, so a confined search costs what its slots cost.
  thread_local std::vector<uint8_t> in_among;
  std::function<bool(DocId)> lexical_filter;
  const bool run_bm25 = q.lexical == nullptr && q.use_bm25 && q.terms != nullptr;
  const bool mark_among =
      run_bm25 && q.among != nullptr && !(q.admits_covers_among && q.admits != nullptr);
  if (mark_among) {
    if (in_among.size() < live_.size()) in_among.resize(live_.size(), 0);
    for (DocId d : *q.among) in_among[d] = 1;
    const std::function<bool(DocId)>* admits = q.admits;
    lexical_filter = [admits](DocId d) { return in_among[d] != 0 && (!admits || (*admits)(d)); };
  }
  const std::function<bool(DocId)>* bm25_filter = mark_among ? &lexical_filter : q.admits;

  std::vector<ScoredDoc> bm25;
  if (run_bm25) {
    bm25 = bm25_.Search(*q.terms, per_retriever, bm25_filter, q.bm25_stats);
  }
  const std::vector<ScoredDoc>& lexical = q.lexical != nullptr ? *q.lexical : bm25;
  if (mark_among) {
    for (DocId d : *q.among) in_among[d] = 0;
  }

  std::vector<ScoredDoc> semantic;
  if (!q.vector.empty() && static_cast<int>(q.vector.size()) == vectors_.dim()) {
    semantic = q.among != nullptr
                   ? vectors_.SearchAmong(q.vector.data(), per_retriever, *q.among, q.admits)
                   : vectors_.Search(q.vector.data(), per_retriever, q.admits);
  }
  hits.ranked =
      Fuse(lexical, semantic, q.k, q.fusion, q.prior, q.scale, q.explain ? &hits.parts : nullptr);
  if (q.relevance_floor > 0 && !hits.ranked.empty()) {
    DropWithoutEvidence(lexical, semantic, q.relevance_floor, hits.ranked);
  }
  if (q.keep_cosines) {
    hits.cosines = std::move(semantic);
    std::sort(hits.cosines.begin(), hits.cosines.end(),
              [](const ScoredDoc& a, const ScoredDoc& b) { return a.doc < b.doc; });
  }
  return hits;
}

size_t HybridIndex::MemoryBytes() const {
  size_t bytes = bm25_.MemoryBytes() + vectors_.MemoryBytes() + live_.capacity() +
                 seq_of_.capacity() * sizeof(int64_t) +
                 key_of_.capacity() * sizeof(const std::string*) + free_.capacity() * sizeof(DocId);
  bytes += by_key_.bucket_count() * sizeof(void*);
  for (const auto& [key, slot] : by_key_) {
    bytes += kHashNodeBytes + sizeof(*by_key_.begin()) + StringHeapBytes(key);
  }
  bytes += by_seq_.bucket_count() * sizeof(void*) +
           by_seq_.size() * (kHashNodeBytes + sizeof(*by_seq_.begin()));
  return bytes;
}

}  // namespace engram
