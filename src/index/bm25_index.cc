#include "index/bm25_index.h"

#include <algorithm>
#include <cassert>
#include <cmath>
#include <limits>

#include "common/memory_bytes.h"

namespace engram {
namespace {

// Per-thread accumulator for Search: a dense score array indexed by DocId (zero = untouched) and
// the list of touched docs, so that resetting costs O(touched) rather than O(max doc id).
struct Scratch {
  std::vector<float> scores;
  std::vector<DocId> touched;
  bool in_use = false;
};

// Borrows the thread's scratch, or a private one if it is already in use on this thread (a filter
// callback that searches another index). Always leaves the scratch zeroed, even if the filter
// throws.
class ScratchLease {
 public:
  explicit ScratchLease(size_t doc_slots) {
    thread_local Scratch shared;
    scratch_ = shared.in_use ? &own_ : &shared;
    scratch_->in_use = true;
    if (scratch_->scores.size() < doc_slots) scratch_->scores.resize(doc_slots, 0.0f);
  }
  ~ScratchLease() {
    for (DocId doc : scratch_->touched) scratch_->scores[doc] = 0.0f;
    scratch_->touched.clear();
    scratch_->in_use = false;
  }
  ScratchLease(const ScratchLease&) = delete;
  ScratchLease& operator=(const ScratchLease&) = delete;

  Scratch& get() { return *scratch_; }

 private:
  Scratch own_;
  Scratch* scratch_;
};

constexpr uint32_t kNoTerm = std::numeric_limits<uint32_t>::max();

}  // namespace

Bm25Index::Bm25Index(Bm25Options options) : options_(options) {}

void Bm25Index::EnsureDocSlot(DocId doc) {
  if (doc >= doc_meta_.size()) {
    doc_meta_.resize(static_cast<size_t>(doc) + 1);
    doc_length_.resize(static_cast<size_t>(doc) + 1, 0);
  }
}

void Bm25Index::Add(DocId doc, const std::vector<std::string>& terms) {
  EnsureDocSlot(doc);
  if (doc_meta_[doc].state == DocState::kLive) Remove(doc);
  if (doc_meta_[doc].state == DocState::kDead) PurgeDead(doc);

  std::vector<uint32_t> ids;
  ids.reserve(terms.size());
  for (const std::string& term : terms) {
    auto it = dictionary_.find(std::string_view(term));
    if (it == dictionary_.end()) {
      it = dictionary_.emplace(term, static_cast<uint32_t>(postings_.size())).first;
      postings_.emplace_back();
    }
    ids.push_back(it->second);
  }
  std::sort(ids.begin(), ids.end());

  DocMeta& meta = doc_meta_[doc];
  assert(forward_.size() <= std::numeric_limits<uint32_t>::max());
  meta.forward_offset = static_cast<uint32_t>(forward_.size());
  uint32_t distinct = 0;
  for (size_t i = 0; i < ids.size();) {
    size_t j = i;
    while (j < ids.size() && ids[j] == ids[i]) ++j;
    PostingList& list = postings_[ids[i]];
    Posting posting{doc, static_cast<uint32_t>(j - i)};
    // Callers usually assign increasing ids, so appending keeps the list sorted.
    if (list.entries.empty() || list.entries.back().doc < doc) {
      list.entries.push_back(posting);
    } else {
      auto pos = std::lower_bound(list.entries.begin(), list.entries.end(), doc,
                                  [](const Posting& p, DocId d) { return p.doc < d; });
      list.entries.insert(pos, posting);
    }
    ++list.live_df;
    forward_.push_back(ids[i]);
    ++distinct;
    i = j;
  }
  meta.forward_count = distinct;
  meta.state = DocState::kLive;
  uint32_t length =
      static_cast<uint32_t>(std::min<size_t>(terms.size(), std::numeric_limits<uint32_t>::max()));
  doc_length_[doc] = length;
  ++live_docs_;
  live_length_sum_ += length;
  live_postings_ += distinct;
}

void Bm25Index::Remove(DocId doc) {
  if (!Contains(doc)) return;
  DocMeta& meta = doc_meta_[doc];
  for (uint32_t i = 0; i < meta.forward_count; ++i) {
    --postings_[forward_[meta.forward_offset + i]].live_df;
  }
  meta.state = DocState::kDead;
  --live_docs_;
  live_length_sum_ -= doc_length_[doc];
  doc_length_[doc] = 0;
  live_postings_ -= meta.forward_count;
  dead_postings_ += meta.forward_count;
  MaybeCompact();
}

bool Bm25Index::Contains(DocId doc) const {
  return doc < doc_meta_.size() && doc_meta_[doc].state == DocState::kLive;
}

void Bm25Index::PurgeDead(DocId doc) {
  DocMeta& meta = doc_meta_[doc];
  assert(meta.state == DocState::kDead);
  for (uint32_t i = 0; i < meta.forward_count; ++i) {
    std::vector<Posting>& entries = postings_[forward_[meta.forward_offset + i]].entries;
    auto pos = std::lower_bound(entries.begin(), entries.end(), doc,
                                [](const Posting& p, DocId d) { return p.doc < d; });
    if (pos != entries.end() && pos->doc == doc) entries.erase(pos);
  }
  dead_postings_ -= meta.forward_count;
  dead_forward_ += meta.forward_count;
  meta = DocMeta{};
}

void Bm25Index::MaybeCompact() {
  // Compaction costs O(all postings); waiting until a quarter of them are dead keeps its
  // amortised cost per removal constant while bounding wasted memory and scan time to ~33%.
  const size_t total = live_postings_ + dead_postings_;
  if (dead_postings_ * 4 > total || dead_forward_ * 2 > forward_.size()) Compact();
}

void Bm25Index::Compact() {
  std::vector<uint32_t> remap(postings_.size(), kNoTerm);
  uint32_t next = 0;
  for (size_t t = 0; t < postings_.size(); ++t) {
    std::vector<Posting>& entries = postings_[t].entries;
    entries.erase(std::remove_if(entries.begin(), entries.end(),
                                 [this](const Posting& p) {
                                   return doc_meta_[p.doc].state != DocState::kLive;
                                 }),
                  entries.end());
    if (entries.empty()) continue;
    if (entries.capacity() > 2 * entries.size()) entries.shrink_to_fit();
    remap[t] = next;
    if (next != t) postings_[next] = std::move(postings_[t]);
    ++next;
  }
  postings_.resize(next);
  for (auto it = dictionary_.begin(); it != dictionary_.end();) {
    if (remap[it->second] == kNoTerm) {
      it = dictionary_.erase(it);
    } else {
      it->second = remap[it->second];
      ++it;
    }
  }

  std::vector<uint32_t> forward;
  forward.reserve(live_postings_);
  for (DocMeta& meta : doc_meta_) {
    if (meta.state != DocState::kLive) {
      meta = DocMeta{};
      continue;
    }
    uint32_t offset = static_cast<uint32_t>(forward.size());
    for (uint32_t i = 0; i < meta.forward_count; ++i) {
      forward.push_back(remap[forward_[meta.forward_offset + i]]);
    }
    meta.forward_offset = offset;
  }
  forward_.swap(forward);
  dead_postings_ = 0;
  dead_forward_ = 0;
}

std::vector<ScoredDoc> Bm25Index::Search(const std::vector<std::string>& query_terms, size_t k,
                                         const std::function<bool(DocId)>* filter,
                                         const Bm25Stats* stats) const {
  std::vector<ScoredDoc> result;
  if (k == 0 || live_docs_ == 0 || query_terms.empty()) return result;

  const std::vector<uint32_t> ids = DistinctLiveTermIds(query_terms);
  if (ids.empty()) return result;

  float n = 0, avgdl = 1;
  Collection(stats, &n, &avgdl);
  const float k1 = options_.k1;
  const float b = options_.b;
  // tf + k1 * (1 - b + b * dl / avgdl) == tf + norm_base + norm_per_len * dl
  const float norm_base = k1 * (1.0f - b);
  const float norm_per_len = k1 * b / avgdl;

  ScratchLease lease(doc_meta_.size());
  Scratch& scratch = lease.get();
  float* scores = scratch.scores.data();
  const uint32_t* lengths = doc_length_.data();
  // Term-at-a-time accumulation. Dead docs are accumulated too and dropped below: one state
  // check per candidate is cheaper than one per posting.
  for (uint32_t id : ids) {
    const PostingList& list = postings_[id];
    const float df = DocFrequency(list, id, stats);
    const float idf = std::log(1.0f + (n - df + 0.5f) / (df + 0.5f));
    const float weight = idf * (k1 + 1.0f);
    for (const Posting& p : list.entries) {
      const float tf = static_cast<float>(p.tf);
      float& acc = scores[p.doc];
      // Every contribution is > 0 (idf > 0, tf >= 1), so 0 marks an untouched doc.
      if (acc == 0.0f) scratch.touched.push_back(p.doc);
      acc += weight * tf / (tf + norm_base + norm_per_len * static_cast<float>(lengths[p.doc]));
    }
  }

  // Bounded heap whose front is the worst kept doc. The filter runs only for docs that would
  // enter it, so a selective filter costs little and a permissive one is called ~k log n times.
  std::vector<ScoredDoc>& heap = result;
  heap.reserve(std::min(k, scratch.touched.size()));
  for (DocId doc : scratch.touched) {
    if (doc_meta_[doc].state != DocState::kLive) continue;
    ScoredDoc candidate{doc, scores[doc]};
    const bool full = heap.size() == k;
    if (full && !RanksBefore(candidate, heap.front())) continue;
    if (filter != nullptr && !(*filter)(doc)) continue;
    if (full) {
      std::pop_heap(heap.begin(), heap.end(), RanksBefore);
      heap.back() = candidate;
    } else {
      heap.push_back(candidate);
    }
    std::push_heap(heap.begin(), heap.end(), RanksBefore);
  }
  std::sort_heap(heap.begin(), heap.end(), RanksBefore);
  return result;
}

Bm25Stats Bm25Index::StatsOver(const std::vector<std::string>& query_terms,
                               const std::vector<DocId>& docs) const {
  Bm25Stats stats;
  const std::vector<uint32_t> ids = DistinctLiveTermIds(query_terms);
  if (ids.empty()) return stats;  // no score will use them
  // Per-thread membership table, reset after use: the cost is that of `docs` and the postings.
  thread_local std::vector<uint8_t> member;
  if (member.size() < doc_meta_.size()) member.resize(doc_meta_.size(), 0);
  std::vector<DocId> marked;
  marked.reserve(docs.size());
  for (DocId d : docs) {
    if (d >= doc_meta_.size() || doc_meta_[d].state != DocState::kLive || member[d]) continue;
    member[d] = 1;
    marked.push_back(d);
    stats.length_sum += doc_length_[d];
  }
  stats.docs = marked.size();
  for (uint32_t id : ids) {
    uint32_t df = 0;
    for (const Posting& p : postings_[id].entries) df += member[p.doc];
    stats.df.emplace_back(id, df);
  }
  for (DocId d : marked) member[d] = 0;
  return stats;
}

std::vector<uint32_t> Bm25Index::DistinctLiveTermIds(
    const std::vector<std::string>& query_terms) const {
  std::vector<uint32_t> ids;
  ids.reserve(query_terms.size());
  for (const std::string& term : query_terms) {
    auto it = dictionary_.find(std::string_view(term));
    if (it != dictionary_.end() && postings_[it->second].live_df > 0) ids.push_back(it->second);
  }
  std::sort(ids.begin(), ids.end());
  ids.erase(std::unique(ids.begin(), ids.end()), ids.end());
  return ids;
}

size_t Bm25Index::MemoryBytes() const {
  size_t bytes = sizeof(*this);
  // Hash nodes with their values, plus the bucket array.
  bytes += dictionary_.bucket_count() * sizeof(void*);
  for (const auto& [term, id] : dictionary_) {
    bytes +=
        kHashNodeBytes + sizeof(std::pair<const std::string, uint32_t>) + StringHeapBytes(term);
  }
  bytes += postings_.capacity() * sizeof(PostingList);
  for (const PostingList& list : postings_) bytes += list.entries.capacity() * sizeof(Posting);
  bytes += doc_length_.capacity() * sizeof(uint32_t);
  bytes += doc_meta_.capacity() * sizeof(DocMeta);
  bytes += forward_.capacity() * sizeof(uint32_t);
  return bytes;
}

}  // namespace engram
