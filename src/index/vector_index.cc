#include "index/vector_index.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstring>
#include <limits>
#include <queue>
#include <system_error>
#include <thread>
#include <unordered_map>
#include <utility>

#include "index/int8_vectors.h"

namespace engram {

VectorIndex::VectorIndex(VectorIndexOptions options) : options_(options) {}

VectorIndex::~VectorIndex() {
  cancel_.store(true);
  if (builder_.joinable()) builder_.join();
}

void VectorIndex::Set(DocId doc, const float* vector) {
  const size_t dim = static_cast<size_t>(options_.dim);
  bool add_now = false, maybe_build = false;
  {
    MutexLock lock(&build_mu_);
    if (doc >= present_.size()) {
      size_t n = static_cast<size_t>(doc) + 1;
      codes_.resize(n * dim);
      scales_.resize(n, 0.0f);
      sums_.resize(n, 0);
      present_.resize(n, false);
    }
    graph_saved_ = false;
    int8_t* c = codes_.data() + static_cast<size_t>(doc) * dim;
    scales_[doc] = QuantizeInt8(vector, options_.dim, c);
    sums_[doc] = CodeSum(c, options_.dim);
    if (!present_[doc]) {
      present_[doc] = true;
      ++count_;
    } else {
      removed_since_load_ = true;  // the former vector's code is no longer the doc's
      if (hnsw_ != nullptr && !building_.load(std::memory_order_relaxed)) {
        ZeroSavedSoonLocked(ElementsOf(*hnsw_, {doc}));
      }
    }
    if (building_.load(std::memory_order_relaxed)) {
      dirty_.push_back(doc);
    } else if (hnsw_ != nullptr) {
      if (in_batch_) {
        batch_docs_.push_back(doc);
      } else {
        add_now = true;
      }
    } else {
      maybe_build = !in_batch_;
    }
  }
  if (add_now) {
    AddToGraph({doc});
  } else if (maybe_build) {
    MaybeBuildHnsw();
  }
}

void VectorIndex::Remove(DocId doc) {
  MutexLock lock(&build_mu_);
  if (doc >= present_.size() || !present_[doc]) return;
  present_[doc] = false;
  scales_[doc] = 0;
  graph_saved_ = false;
  removed_since_load_ = true;
  --count_;
  if (building_.load(std::memory_order_relaxed)) {
    dirty_.push_back(doc);
  } else if (hnsw_ != nullptr) {
    ZeroSavedSoonLocked(ElementsOf(*hnsw_, {doc}));
    hnsw_->Remove(doc);
  }
}

std::vector<size_t> VectorIndex::ElementsOf(HnswGraph& graph, const std::vector<DocId>& docs) {
  std::vector<size_t> elements;
  for (const DocId d : docs) {
    if (auto e = graph.ElementOf(d)) elements.push_back(*e);
  }
  return elements;
}

void VectorIndex::ZeroSavedSoonLocked(std::vector<size_t> elements) {
  if (!in_batch_) return ZeroSavedLocked(std::move(elements));
  zero_in_batch_.insert(zero_in_batch_.end(), elements.begin(), elements.end());
}

void VectorIndex::ZeroSavedLocked(std::vector<size_t> elements) {
  const size_t saved = saved_elements_;
  std::erase_if(elements, [saved](size_t e) { return e >= saved; });
  if (elements.empty()) return;
  if (!HnswGraph::ZeroSavedElements(options_.graph_file, std::move(elements)).ok()) {
    // A code that cannot be zeroed must not stay behind: the whole file goes.
    HnswGraph::RemoveSaved(options_.graph_file);
    saved_elements_ = 0;
    ++file_changes_;
    graph_saved_ = false;
  }
}

bool VectorIndex::Contains(DocId doc) const { return doc < present_.size() && present_[doc]; }

void VectorIndex::BeginBatch() {
  in_batch_ = true;
  batch_docs_.clear();
}

void VectorIndex::EndBatch() {
  in_batch_ = false;
  std::vector<DocId> docs = std::move(batch_docs_);
  batch_docs_ = {};
  bool has_graph;
  {
    MutexLock lock(&build_mu_);
    // The batch's removals and replacements, zeroed in the saved file in one pass.
    ZeroSavedLocked(std::exchange(zero_in_batch_, {}));
    if (building_.load(std::memory_order_relaxed)) return;  // the builder has the batch's changes
    has_graph = hnsw_ != nullptr;
  }
  if (!has_graph) {
    MaybeBuildHnsw();
    return;
  }
  std::sort(docs.begin(), docs.end());
  docs.erase(std::unique(docs.begin(), docs.end()), docs.end());
  std::erase_if(docs, [this](DocId d) { return !present_[d]; });
  AddToGraph(docs);
}

void VectorIndex::WaitForGraph() {
  if (builder_.joinable()) builder_.join();
}

void VectorIndex::MaybeBuildHnsw() {
  std::vector<DocId> docs;
  auto present_docs = [this] {
    std::vector<DocId> out;
    out.reserve(count_);
    for (DocId d = 0; d < present_.size(); ++d) {
      if (present_[d]) out.push_back(d);
    }
    return out;
  };
  {
    MutexLock lock(&build_mu_);
    if (options_.hnsw_threshold == 0 || count_ < options_.hnsw_threshold || graph_failed_ ||
        hnsw_ != nullptr || building_.load(std::memory_order_relaxed)) {
      return;
    }
    building_.store(true, std::memory_order_relaxed);
    dirty_.clear();
    docs = present_docs();
    if (options_.hnsw_build_in_background && !builder_.joinable()) {
      try {
        builder_ = std::thread(&VectorIndex::RunBuild, this, std::move(docs));
        return;
      } catch (const std::system_error&) {
        docs = present_docs();  // no thread to be had: build here, as without the option
      }
    }
  }
  // Here, inside the write that crossed the threshold: no other writer runs, so the catch-up
  // finds nothing to do and the graph is published before this returns.
  RunBuild(std::move(docs));
}

HnswGraphOptions VectorIndex::GraphOptions() const {
  return {.dim = options_.dim,
          .m = options_.hnsw_m,
          .ef_construction = options_.hnsw_ef_construction,
          .ef_search = options_.hnsw_ef_search};
}

std::unique_ptr<HnswGraph> VectorIndex::AdoptSaved(std::vector<DocId>& docs, size_t capacity) {
  uint64_t file_changes = 0;
  {
    MutexLock lock(&build_mu_);
    file_changes = file_changes_;
  }
  auto loaded = HnswGraph::Load(options_.graph_file, GraphOptions(), capacity);
  if (!loaded.ok()) {
    // A file of other parameters, or damaged, is of no use, and may hold codes of vectors
    // removed since: it goes (the next save writes one anew).
    if (loaded.status().code() != StatusCode::kNotFound) {
      HnswGraph::RemoveSaved(options_.graph_file);
    }
    return nullptr;
  }
  std::unique_ptr<HnswGraph> graph = std::move(*loaded);
  building_bytes_.store(graph->MemoryBytes(), std::memory_order_relaxed);
  // The loaded vectors by the hash of their element, those of equal hash chained (equal texts
  // have equal vectors); an element is matched to a vector whose bytes equal its own. The lock is
  // taken a chunk at a time, so writers go on meanwhile: a vector changed after its match is in
  // dirty_ and re-inserted by the catch-up.
  constexpr uint32_t kEnd = std::numeric_limits<uint32_t>::max();
  constexpr size_t kChunk = 4096;
  const int dim = options_.dim;
  std::unordered_map<uint64_t, uint32_t> first;
  std::vector<uint32_t> next(docs.size(), kEnd);
  first.reserve(docs.size());
  std::vector<char> packed(ElementBytes(dim));
  for (size_t begin = 0; begin < docs.size(); begin += kChunk) {
    MutexLock lock(&build_mu_);
    for (size_t i = begin; i < std::min(begin + kChunk, docs.size()); ++i) {
      const DocId d = docs[i];
      if (d >= present_.size() || !present_[d]) continue;
      PackElement(packed.data(), scales_[d], code(d), dim);
      auto [it, inserted] =
          first.try_emplace(ElementHash(packed.data(), dim), static_cast<uint32_t>(i));
      if (!inserted) {
        next[i] = it->second;
        it->second = static_cast<uint32_t>(i);
      }
    }
  }
  const size_t n = graph->elements();
  std::vector<DocId> labels(n, HnswGraph::kNoDoc);
  std::vector<bool> matched(docs.size(), false);
  size_t taken = 0;
  for (size_t begin = 0; begin < n; begin += kChunk) {
    MutexLock lock(&build_mu_);
    for (size_t e = begin; e < std::min(begin + kChunk, n); ++e) {
      if (graph->deleted(e)) continue;
      const char* element = graph->element(e);
      auto it = first.find(ElementHash(element, dim));
      if (it == first.end()) continue;
      auto same = [&](DocId d) {
        return d < present_.size() && present_[d] &&
               std::memcmp(element, &scales_[d], sizeof(float)) == 0 &&
               std::memcmp(element + sizeof(float), code(d), static_cast<size_t>(dim)) == 0;
      };
      uint32_t prev = kEnd, i = it->second;
      while (i != kEnd && !same(docs[i])) {
        prev = i;
        i = next[i];
      }
      if (i == kEnd) continue;
      if (prev != kEnd) {
        next[prev] = next[i];
      } else if (next[i] == kEnd) {
        first.erase(it);
      } else {
        it->second = next[i];
      }
      labels[e] = docs[i];
      matched[i] = true;
      ++taken;
    }
  }
  // A saved graph that matches less than half the vectors saves less than it costs, and one whose
  // elements are more than a quarter stale (deleted, or vectors since changed) searches through
  // too many dead ends: build anew.
  if (taken * 2 < docs.size() || (n - taken) * 4 > n) {
    building_bytes_.store(0, std::memory_order_relaxed);
    HnswGraph::RemoveSaved(options_.graph_file);  // as above: not taken, it goes
    return nullptr;
  }
  // Elements no loaded vector matched hold codes of vectors removed or changed while the scope
  // was not loaded: zeroed in the file now (those deleted in it, or zeroed since, are already).
  std::vector<size_t> stale;
  const size_t element_bytes = ElementBytes(dim);
  for (size_t e = 0; e < n; ++e) {
    if (labels[e] != HnswGraph::kNoDoc || graph->deleted(e)) continue;
    const char* element = graph->element(e);
    if (std::any_of(element, element + element_bytes, [](char b) { return b != 0; })) {
      stale.push_back(e);
    }
  }
  graph->Relabel(labels);
  std::vector<DocId> rest;
  for (size_t i = 0; i < docs.size(); ++i) {
    if (!matched[i]) rest.push_back(docs[i]);
  }
  {
    MutexLock lock(&build_mu_);
    // Unless the file was removed or rewritten since it was read (a save or a discard meanwhile).
    if (file_changes_ == file_changes && !graph_discarded_) {
      graph_saved_ = rest.empty() && taken == n && dirty_.empty();
      saved_elements_ = n;
      ZeroSavedLocked(std::move(stale));
    }
  }
  docs = std::move(rest);
  adopted_.store(taken, std::memory_order_relaxed);
  return graph;
}

Status VectorIndex::SaveGraph() {
  if (options_.graph_file.empty()) return Status::Ok();
  MutexLock lock(&build_mu_);
  if (graph_discarded_) return Status::Ok();
  if (building_.load(std::memory_order_relaxed)) {
    // The first build (or its taking of the saved graph) still runs: nothing to save yet. A
    // vector removed meanwhile may still have its code in the file, which then goes.
    if (removed_since_load_) {
      HnswGraph::RemoveSaved(options_.graph_file);
      ++file_changes_;
    }
    return Status::Ok();
  }
  if (hnsw_ == nullptr) {
    // Either the scope is below the threshold or its graph failed (out of memory): the file is
    // of no use now, and holds codes of vectors that may since have been removed.
    HnswGraph::RemoveSaved(options_.graph_file);
    saved_elements_ = 0;
    ++file_changes_;
    return Status::Ok();
  }
  if (graph_saved_) return Status::Ok();
  Status st = hnsw_->Save(options_.graph_file);
  ++file_changes_;
  graph_saved_ = st.ok();
  saved_elements_ = st.ok() ? hnsw_->elements() : 0;
  // A save that failed (out of space) may leave the former file, whose codes can no longer be
  // zeroed as vectors go: it goes too.
  if (!st.ok()) HnswGraph::RemoveSaved(options_.graph_file);
  return st;
}

void VectorIndex::DiscardSavedGraph() {
  if (options_.graph_file.empty()) return;
  MutexLock lock(&build_mu_);
  graph_discarded_ = true;
  saved_elements_ = 0;
  ++file_changes_;
  HnswGraph::RemoveSaved(options_.graph_file);
}

void VectorIndex::RunBuild(std::vector<DocId> docs) {
  const auto started = std::chrono::steady_clock::now();
  std::unique_ptr<HnswGraph> graph;
  bool ok = true;
  const size_t capacity = docs.size() + docs.size() / 8 + 1024;
  if (!options_.graph_file.empty()) graph = AdoptSaved(docs, capacity);
  if (graph == nullptr) {
    try {
      graph = std::make_unique<HnswGraph>(GraphOptions(), capacity);
      building_bytes_.store(graph->MemoryBytes(), std::memory_order_relaxed);
    } catch (const std::exception&) {
      ok = false;
    }
  }
  ok = ok && Insert(*graph, docs, std::numeric_limits<size_t>::max(), nullptr);
  docs = {};
  // Catch up with what writers changed meanwhile: with the lock taken per chunk while the changes
  // are many (writers go on), the last round under the lock, so that nothing changes between it
  // and the graph's publication, which ends the build in the same critical section.
  constexpr size_t kLastRound = 1024;
  constexpr int kMaxRounds = 8;
  std::optional<GraphBuilt> built;
  std::vector<DocId> changed_all;  // every vector changed during the build
  for (int round = 0;; ++round) {
    std::vector<DocId> changed;
    {
      MutexLock lock(&build_mu_);
      const bool cancelled = cancel_.load();
      if (ok && !cancelled) {
        changed.swap(dirty_);
        std::sort(changed.begin(), changed.end());
        changed.erase(std::unique(changed.begin(), changed.end()), changed.end());
      }
      if (!ok || cancelled || changed.size() <= kLastRound || round == kMaxRounds) {
        if (ok && !cancelled && CatchUpLocked(*graph, changed)) {
          // Vectors removed or replaced during the build may have their former code in the file.
          changed_all.insert(changed_all.end(), changed.begin(), changed.end());
          ZeroSavedLocked(ElementsOf(*graph, changed_all));
          hnsw_ = std::move(graph);
          graph_.store(hnsw_.get(), std::memory_order_release);
          built = GraphBuilt{
              .vectors = count_,
              .adopted = adopted_.load(std::memory_order_relaxed),
              .seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started)
                             .count()};
        } else if (!cancelled) {
          graph_failed_ = true;  // the exact scan answers from now on
        }
        dirty_ = {};
        building_bytes_.store(0, std::memory_order_relaxed);
        building_.store(false, std::memory_order_relaxed);
        break;
      }
    }
    changed_all.insert(changed_all.end(), changed.begin(), changed.end());
    std::vector<DocId> absent;
    ok = Insert(*graph, changed, 1, &absent);
    for (DocId d : absent) graph->Remove(d);
  }
  if (built && options_.on_graph_built) options_.on_graph_built(*built);
}

bool VectorIndex::CatchUpLocked(HnswGraph& graph, const std::vector<DocId>& docs) {
  std::vector<char> element(ElementBytes(options_.dim));
  try {
    graph.Reserve(docs.size());
    for (DocId d : docs) {
      if (!present_[d]) {
        graph.Remove(d);
        continue;
      }
      PackElement(element.data(), scales_[d], code(d), options_.dim);
      graph.Add(element.data(), d);
    }
  } catch (const std::exception&) {
    return false;
  }
  return true;
}

void VectorIndex::AddToGraph(const std::vector<DocId>& docs) {
  if (docs.empty() || Insert(*hnsw_, docs, std::numeric_limits<size_t>::max(), nullptr)) return;
  // A graph missing vectors would lose results: the exact scan answers from now on.
  MutexLock lock(&build_mu_);
  graph_.store(nullptr, std::memory_order_release);
  hnsw_.reset();
  graph_failed_ = true;
}

bool VectorIndex::Insert(HnswGraph& graph, const std::vector<DocId>& docs, size_t max_threads,
                         std::vector<DocId>* absent) {
  if (docs.empty()) return true;
  // Below a few thousand insertions a thread costs more than it saves.
  constexpr size_t kPerThread = 2048;
  size_t threads = options_.hnsw_build_threads > 0
                       ? static_cast<size_t>(options_.hnsw_build_threads)
                       : std::max(1u, std::thread::hardware_concurrency());
  threads = std::clamp<size_t>(docs.size() / kPerThread, 1, std::min(threads, max_threads));
  // Threads take chunks of `docs` in turn and copy a chunk's codes under build_mu_ (a background
  // build runs beside writers). hnswlib's concurrent insertion locks per element; its level draw
  // shares one unsynchronised random engine, where a lost update only repeats a level. A failure
  // (hnswlib throws when memory runs out) stops every thread.
  constexpr size_t kChunk = 64;
  const size_t element_size = ElementBytes(options_.dim);
  std::atomic<size_t> next{0};
  std::atomic<bool> failed{false};
  Mutex absent_mu;
  auto work = [&] {
    std::vector<char> elements(kChunk * element_size);
    DocId ids[kChunk];
    std::vector<DocId> skipped;
    try {
      while (!failed.load(std::memory_order_relaxed) && !cancel_.load(std::memory_order_relaxed)) {
        const size_t begin = next.fetch_add(kChunk, std::memory_order_relaxed);
        if (begin >= docs.size()) break;
        const size_t end = std::min(begin + kChunk, docs.size());
        size_t n = 0;
        {
          MutexLock lock(&build_mu_);
          for (size_t i = begin; i < end; ++i) {
            const DocId d = docs[i];
            if (d >= present_.size() || !present_[d]) {
              skipped.push_back(d);
              continue;
            }
            PackElement(elements.data() + n * element_size, scales_[d], code(d), options_.dim);
            ids[n++] = d;
          }
        }
        for (size_t j = 0; j < n; ++j) graph.Add(elements.data() + j * element_size, ids[j]);
      }
    } catch (const std::exception&) {
      failed.store(true, std::memory_order_relaxed);
    }
    if (absent != nullptr) {
      MutexLock lock(&absent_mu);
      absent->insert(absent->end(), skipped.begin(), skipped.end());
    }
  };
  try {
    graph.Reserve(docs.size());
  } catch (const std::exception&) {
    return false;
  }
  std::vector<std::thread> helpers;
  helpers.reserve(threads - 1);
  for (size_t t = 1; t < threads; ++t) {
    try {
      helpers.emplace_back(work);
    } catch (const std::system_error&) {
      break;  // fewer threads
    }
  }
  work();
  for (std::thread& t : helpers) t.join();
  return !failed.load() && !cancel_.load();
}

template <typename Next, typename Admit>
std::vector<ScoredDoc> VectorIndex::Scan(size_t k, Next next, Admit admit) const {
  // A min-heap of the k best: RanksBefore orders best first, so the front is the worst kept.
  std::vector<ScoredDoc> heap;
  heap.reserve(k + 1);
  DocId d;
  float s;
  while (next(&d, &s)) {
    if (heap.size() < k) {
      if (!admit(d)) continue;
      heap.push_back({d, s});
      std::push_heap(heap.begin(), heap.end(), RanksBefore);
    } else if (s > heap.front().score && admit(d)) {
      std::pop_heap(heap.begin(), heap.end(), RanksBefore);
      heap.back() = {d, s};
      std::push_heap(heap.begin(), heap.end(), RanksBefore);
    }
  }
  std::sort(heap.begin(), heap.end(), RanksBefore);
  return heap;
}

std::vector<ScoredDoc> VectorIndex::Search(const float* query, size_t k,
                                           const std::function<bool(DocId)>* filter) const {
  std::vector<ScoredDoc> out;
  if (k == 0 || count_ == 0) return out;
  std::vector<int8_t> q(static_cast<size_t>(options_.dim));
  const float qs = QuantizeInt8(query, options_.dim, q.data());
  const HnswGraph* graph = graph_.load(std::memory_order_acquire);
  if (graph != nullptr && filter == nullptr) {
    std::vector<char> element(ElementBytes(options_.dim));
    PackElement(element.data(), qs, q.data(), options_.dim);
    return graph->Search(element.data(), k);
  }
  // Every stored code in DocId order, a block at a time: DotInt8ManySummed prepares the query once
  // per block and runs the whole block in SIMD (AVX-512 VNNI where the CPU has it). A code is
  // looked at further only when it beats the k-th best so far (`floor`): codes come in increasing
  // DocId order, so an equal score never ranks before the kept one (RanksBefore breaks ties by
  // lower DocId). Candidates collect in a buffer cut back to the best k whenever it reaches 2k,
  // which costs O(1) per candidate where a heap of k = 200 cost a sift each (~40 % of a
  // 10,000-vector scan on random data).
  constexpr size_t kBlock = 256;
  int32_t dots[kBlock];
  std::vector<ScoredDoc> best;
  best.reserve(2 * k);
  float floor = -std::numeric_limits<float>::infinity();
  auto cut = [&] {
    std::nth_element(best.begin(), best.begin() + static_cast<long>(k - 1), best.end(),
                     RanksBefore);
    best.resize(k);
    floor = best[k - 1].score;
  };
  const size_t total = present_.size();
  for (size_t begin = 0; begin < total; begin += kBlock) {
    const size_t n = std::min(kBlock, total - begin);
    DotInt8ManySummed(q.data(), code(static_cast<DocId>(begin)), sums_.data() + begin, options_.dim,
                      n, dots);
    for (size_t j = 0; j < n; ++j) {
      const DocId d = static_cast<DocId>(begin + j);
      const float score = qs * scales_[d] * static_cast<float>(dots[j]);
      if (score <= floor || !present_[d] || (filter != nullptr && !(*filter)(d))) continue;
      best.push_back({d, score});
      if (best.size() == 2 * k) cut();
    }
  }
  KeepTopK(best, k);
  return best;
}

std::vector<ScoredDoc> VectorIndex::SearchAmong(const float* query, size_t k,
                                                const std::vector<DocId>& docs,
                                                const std::function<bool(DocId)>* filter) const {
  if (k == 0 || count_ == 0) return {};
  std::vector<int8_t> q(static_cast<size_t>(options_.dim));
  const float qs = QuantizeInt8(query, options_.dim, q.data());
  // Scores a block of `docs` at a time. A scope's docs are mostly consecutive DocIds (one user's
  // memories, added together), whose codes lie one after another: such a run goes through
  // DotInt8ManySummed in one call, as Search's full scan does, instead of one DotInt8 per doc
  // (on a 10,000-memory scope the per-doc calls were ~18 % of a hybrid search's CPU). The dot
  // products are exact integers either way, so scores and ranking do not change.
  constexpr size_t kBlock = 256;
  int32_t dots[kBlock];
  DocId block_docs[kBlock];
  size_t block_size = 0, block_pos = 0;
  size_t i = 0;
  auto fill = [&] {
    block_size = block_pos = 0;
    while (i < docs.size() && block_size < kBlock) {
      // The longest run of consecutive, stored DocIds starting at docs[i] (within the block).
      const DocId first = docs[i];
      if (first >= present_.size()) {
        ++i;
        continue;
      }
      size_t run = 1;
      while (block_size + run < kBlock && i + run < docs.size() && docs[i + run] == first + run &&
             first + run < present_.size()) {
        ++run;
      }
      if (run == 1) {
        dots[block_size] = DotInt8(q.data(), code(first), options_.dim);
      } else {
        DotInt8ManySummed(q.data(), code(first), sums_.data() + first, options_.dim, run,
                          dots + block_size);
      }
      for (size_t j = 0; j < run; ++j) block_docs[block_size + j] = first + static_cast<DocId>(j);
      block_size += run;
      i += run;
    }
  };
  return Scan(
      k,
      [&](DocId* out, float* score) {
        while (true) {
          for (; block_pos < block_size; ++block_pos) {
            const DocId d = block_docs[block_pos];
            if (!present_[d]) continue;
            *out = d;
            *score = qs * scales_[d] * static_cast<float>(dots[block_pos]);
            ++block_pos;
            return true;
          }
          if (i >= docs.size()) return false;
          fill();
        }
      },
      [filter](DocId doc) { return filter == nullptr || (*filter)(doc); });
}

std::optional<float> VectorIndex::Similarity(const float* query, DocId doc) const {
  if (doc >= present_.size() || !present_[doc]) return std::nullopt;
  std::vector<int8_t> q(static_cast<size_t>(options_.dim));
  const float qs = QuantizeInt8(query, options_.dim, q.data());
  return qs * scales_[doc] * static_cast<float>(DotInt8(q.data(), code(doc), options_.dim));
}

size_t VectorIndex::MemoryBytes() const {
  size_t bytes = codes_.capacity() + scales_.capacity() * sizeof(float) +
                 sums_.capacity() * sizeof(int32_t) + present_.capacity() / 8;
  if (const HnswGraph* graph = graph_.load(std::memory_order_acquire))
    bytes += graph->MemoryBytes();
  return bytes + building_bytes_.load(std::memory_order_relaxed);
}

}  // namespace engram
