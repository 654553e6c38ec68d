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
// Thread-safety: not thread-safe. The owner (a shard) serialises writers against readers;
// concurrent const calls are safe when no writer runs. A batch is a write: no search may run
// between BeginBatch and EndBatch (the owner's writer lock spans both). EndBatch's helper threads
// live only inside the call.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <vector>

#include "index/bm25_index.h"

namespace engram {

struct VectorIndexOptions {
  int dim = 512;
  size_t hnsw_threshold = 20000;  // vectors before an HNSW graph is built; 0 = never
  int hnsw_m = 16;
  int hnsw_ef_construction = 100;
  int hnsw_ef_search = 96;  // at least k is used
  // Threads inserting into the graph when many vectors enter at once (its first build, EndBatch);
  // 0 = one per core.
  int hnsw_build_threads = 0;
};

class VectorIndex {
 public:
  explicit VectorIndex(VectorIndexOptions options);
  ~VectorIndex();
  VectorIndex(VectorIndex&&) noexcept;
  VectorIndex& operator=(VectorIndex&&) noexcept;

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

  size_t size() const { return count_; }
  bool uses_hnsw() const { return hnsw_ != nullptr; }
  size_t MemoryBytes() const;
  int dim() const { return options_.dim; }

 private:
  class Hnsw;
  void MaybeBuildHnsw();
  // Inserts `docs` (present ones) into the graph, on several threads when there are many. When
  // the graph cannot grow (out of memory) it is dropped for good and the exact scan answers.
  void AddToGraph(const std::vector<DocId>& docs);
  // Exact scan of the (doc, score) pairs `next` yields (it returns false when done), keeping the
  // k best of those `admit` accepts (asked only for docs that would enter the top-k).
  template <typename Next, typename Admit>
  std::vector<ScoredDoc> Scan(size_t k, Next next, Admit admit) const;
  const int8_t* code(DocId d) const {
    return codes_.data() + static_cast<size_t>(d) * options_.dim;
  }

  VectorIndexOptions options_;
  std::vector<int8_t> codes_;  // DocId-major, dim bytes each
  std::vector<float> scales_;  // per DocId; 0 with present_ false = absent
  std::vector<int32_t> sums_;  // per DocId: CodeSum of its code (DotInt8ManySummed)
  std::vector<bool> present_;
  size_t count_ = 0;
  std::unique_ptr<Hnsw> hnsw_;
  bool graph_failed_ = false;
  bool in_batch_ = false;
  std::vector<DocId> batch_docs_;  // set during the batch, for the graph (may repeat)
};

}  // namespace engram
