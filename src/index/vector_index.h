// VectorIndex: nearest neighbours by cosine similarity over one scope's memory vectors.
//
// Vectors arrive L2-normalised (from an Embedder) and are kept as int8 codes (int8_vectors.h):
// 4x less memory than float32 for a small, measured loss in ranking (see vector_index_test.cc and
// docs/benchmarks.md). Small scopes are scanned exactly; once a scope has `hnsw_threshold`
// vectors an HNSW graph (hnswlib, over the same int8 codes) answers unfiltered queries. Filtered
// queries always scan exactly, so a filter never loses results that a truncated ANN top-k would
// have dropped.
//
// A shard's load brings hundreds of thousands of vectors at once; inserted into the graph one at
// a time, with its capacity doubled as it fills, a million took about five minutes on one core.
// Changes made between BeginBatch and EndBatch leave the graph alone; EndBatch brings it up to
// date in one pass, with its capacity reserved once and the vectors inserted from several
// threads (hnswlib's own concurrent insertion).
//
// The graph's first build (a scope crossing the threshold, or loaded past it) takes minutes at a
// million vectors. With `hnsw_build_in_background` it runs on a thread of its own while the exact
// scan answers (27 ms at a million): the index records what writers change meanwhile, the builder
// catches up with it, and the graph starts answering once it holds every vector.
//
// With `graph_file` set, that first build starts from the graph SaveGraph left there (HnswGraph's
// file): the saved elements matching the loaded vectors are taken as they are and only the rest
// are inserted, so a million-vector scope's graph comes back in seconds instead of minutes.
//
// Thread-safety: not thread-safe. The owner (a shard) serialises writers against readers;
// concurrent const calls are safe when no writer runs. A batch is a write: no search may run
// between BeginBatch and EndBatch (the owner's writer lock spans both). EndBatch's helper threads
// live only inside the call. The background builder synchronises with writers and searches on
// its own (build_mu_, an atomic graph pointer); the owner need not know it runs. Destruction
// stops it.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "common/mutex.h"
#include "common/status.h"
#include "index/bm25_index.h"
#include "index/hnsw_graph.h"

namespace engram {

// A graph's first build, as VectorIndexOptions::on_graph_built reports it.
struct GraphBuilt {
  size_t vectors = 0;  // in the graph when it started answering
  size_t adopted = 0;  // of them, taken from the saved graph
  double seconds = 0;  // from the build's start until the graph answered
};

struct VectorIndexOptions {
  int dim = 512;
  size_t hnsw_threshold = 20000;  // vectors before an HNSW graph is built; 0 = never
  int hnsw_m = 16;
  int hnsw_ef_construction = 100;
  int hnsw_ef_search = 96;  // at least k is used
  // Threads inserting into the graph when many vectors enter at once (its first build, EndBatch);
  // 0 = one per core.
  int hnsw_build_threads = 0;
  // Builds the graph the first time on a thread of its own, the exact scan answering until it is
  // ready (see the file comment); false builds it inside the write that crossed the threshold.
  bool hnsw_build_in_background = true;
  // Where SaveGraph keeps the graph and the first build looks for it ("": built anew each time).
  std::string graph_file;
  // Called once the first build's graph answers, on the thread that built it (the background
  // builder, or the writer); must not call into the index.
  std::function<void(const GraphBuilt&)> on_graph_built;
};

class VectorIndex {
 public:
  explicit VectorIndex(VectorIndexOptions options);
  ~VectorIndex();  // stops a background build
  VectorIndex(const VectorIndex&) = delete;
  VectorIndex& operator=(const VectorIndex&) = delete;

  // Adds or replaces the vector of `doc` (dim floats, L2-normalised).
  void Set(DocId doc, const float* vector);
  void Remove(DocId doc);
  bool Contains(DocId doc) const;

  // Defers the HNSW graph's upkeep until EndBatch (see the file comment). Batches do not nest.
  void BeginBatch();
  void EndBatch();

  // Top-k by cosine similarity (in -1..1), best first; ties by lower DocId. `filter` (may be null)
  // restricts candidates and forces an exact scan.
  std::vector<ScoredDoc> Search(const float* query, size_t k,
                                const std::function<bool(DocId)>* filter = nullptr) const;

  // Top-k among `docs` only (absent ones skipped), by exact scan: for filtered searches whose
  // candidates are known up front (one user's memories in a large workspace). `filter` (may be
  // null) is asked only about docs that would enter the current top-k.
  std::vector<ScoredDoc> SearchAmong(const float* query, size_t k, const std::vector<DocId>& docs,
                                     const std::function<bool(DocId)>* filter = nullptr) const;

  // Cosine similarity of `query` and `doc`'s stored vector; nullopt when doc has none.
  std::optional<float> Similarity(const float* query, DocId doc) const;

  // Saves the graph to `graph_file` when it differs from the one there; with no graph (fewer
  // vectors than the threshold, or the graph failed), or while the first build runs after a
  // Remove, removes a saved one (of no use, and a removed vector's code should not outlive it). A
  // no-op while a first build runs or without `graph_file`. A write, like the changes (the owner's
  // writer side calls it).
  Status SaveGraph() EXCLUDES(build_mu_);
  // Removes the saved graph and saves none from now on: the scope's data was deleted.
  void DiscardSavedGraph() EXCLUDES(build_mu_);
  // Vectors the graph took from the saved one at its first build (0: none saved, or not used).
  size_t graph_adopted() const { return adopted_.load(std::memory_order_relaxed); }

  // Blocks until a background build has finished (the graph answers, or it failed and the exact
  // scan does); returns at once when none runs. A write: the owner's writer side calls it.
  void WaitForGraph();

  size_t size() const { return count_; }
  // Whether the graph answers unfiltered searches (false while it is built in the background).
  bool uses_hnsw() const { return graph_.load(std::memory_order_acquire) != nullptr; }
  bool building_graph() const { return building_.load(std::memory_order_relaxed); }
  // Includes a graph being built.
  size_t MemoryBytes() const;
  int dim() const { return options_.dim; }

 private:
  HnswGraphOptions GraphOptions() const;
  // The graph saved at `graph_file` with its elements relabelled to the loaded vectors, when it
  // matches enough of them; leaves in `docs` the ones it lacks. Null when there is none or it
  // is not worth keeping (see the .cc).
  std::unique_ptr<HnswGraph> AdoptSaved(std::vector<DocId>& docs, size_t capacity)
      EXCLUDES(build_mu_);
  // Builds the graph once the scope has `hnsw_threshold` vectors: in the background, or here.
  void MaybeBuildHnsw() EXCLUDES(build_mu_);
  // A build (building_ set by the caller): `docs` first, then what writers changed meanwhile
  // (dirty_); publishes the graph or marks it failed, and clears building_. The background
  // builder's body, or run inside the write that crossed the threshold.
  void RunBuild(std::vector<DocId> docs) EXCLUDES(build_mu_);
  // Inserts `docs` into the published graph (hnsw_), on several threads when there are many.
  // When the graph cannot grow (out of memory) it is dropped for good and the exact scan answers.
  void AddToGraph(const std::vector<DocId>& docs) EXCLUDES(build_mu_);
  // Inserts (or replaces) the present ones of `docs` into `graph` from up to `max_threads`
  // threads, copying each chunk's codes under build_mu_; appends the absent ones to `absent` (may
  // be null). False when hnswlib failed (out of memory) or the build was cancelled.
  bool Insert(HnswGraph& graph, const std::vector<DocId>& docs, size_t max_threads,
              std::vector<DocId>* absent) EXCLUDES(build_mu_);
  // Zeroes in the saved file the codes of those of `elements` that are the file's (their vector
  // was removed or replaced, or no loaded vector matched them); removes the file when that fails.
  void ZeroSavedLocked(std::vector<size_t> elements) REQUIRES(build_mu_);
  // ZeroSavedLocked now, or at EndBatch for a change inside a batch (one pass over the file for
  // a batch of removals instead of one each).
  void ZeroSavedSoonLocked(std::vector<size_t> elements) REQUIRES(build_mu_);
  // The elements of `docs` in `graph`, for ZeroSavedLocked.
  static std::vector<size_t> ElementsOf(HnswGraph& graph, const std::vector<DocId>& docs);
  // Brings `graph` up to date with `docs` (sorted, unique), one thread: present ones are
  // (re)inserted with their current code, absent ones marked deleted.
  bool CatchUpLocked(HnswGraph& graph, const std::vector<DocId>& docs) REQUIRES(build_mu_);
  // Exact scan of the (doc, score) pairs `next` yields (it returns false when done), keeping the
  // k best of those `admit` accepts (asked only for docs that would enter the top-k).
  template <typename Next, typename Admit>
  std::vector<ScoredDoc> Scan(size_t k, Next next, Admit admit) const;
  const int8_t* code(DocId d) const {
    return codes_.data() + static_cast<size_t>(d) * options_.dim;
  }

  VectorIndexOptions options_;
  // The stored vectors. Writers change them under build_mu_ (the background builder reads them
  // under it); searches read them without it, the owner keeping writers out.
  std::vector<int8_t> codes_;  // DocId-major, dim bytes each
  std::vector<float> scales_;  // per DocId; 0 with present_ false = absent
  std::vector<int32_t> sums_;  // per DocId: CodeSum of its code (DotInt8ManySummed)
  std::vector<bool> present_;
  size_t count_ = 0;
  bool in_batch_ = false;
  std::vector<DocId> batch_docs_;  // set during the batch, for the graph (may repeat)

  Mutex build_mu_;
  // The graph once published (by a writer or the builder, under build_mu_). Writers use it after
  // seeing it under build_mu_: by then no builder touches it.
  std::unique_ptr<HnswGraph> hnsw_;
  std::atomic<const HnswGraph*> graph_{nullptr};  // hnsw_ as searches see it
  bool graph_failed_ GUARDED_BY(build_mu_) = false;
  std::atomic<bool> building_{false};               // set and cleared under build_mu_
  std::vector<DocId> dirty_ GUARDED_BY(build_mu_);  // changed while building (may repeat)
  std::atomic<bool> cancel_{false};
  std::atomic<size_t> building_bytes_{0};  // the graph being built
  // Whether hnsw_ equals the saved graph (taken from it unchanged, or saved since the last change).
  bool graph_saved_ GUARDED_BY(build_mu_) = false;
  bool graph_discarded_ GUARDED_BY(build_mu_) = false;     // DiscardSavedGraph
  bool removed_since_load_ GUARDED_BY(build_mu_) = false;  // a vector removed or replaced
  // Elements [0, saved_elements_) of hnsw_ (or of the graph a build takes from the file) are the
  // file's elements, in its order: a removed or replaced vector's code there is zeroed when the
  // change reaches the graph (at once, or at the end of a build running meanwhile).
  size_t saved_elements_ GUARDED_BY(build_mu_) = 0;
  uint64_t file_changes_ GUARDED_BY(build_mu_) = 0;  // saves, removals and discards of the file
  std::vector<size_t> zero_in_batch_ GUARDED_BY(build_mu_);  // ZeroSavedSoonLocked in a batch
  std::atomic<size_t> adopted_{0};
  std::thread builder_;
};

}  // namespace engram
