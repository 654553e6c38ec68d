// VectorIndex: nearest neighbours by cosine similarity over one scope's memory vectors.
//
// Vectors arrive L2-normalised (from an Embedder) and are kept as int8 codes (int8_vectors.h):
// 4x less memory than float32 for a small, measured loss in ranking (see vector_index_test.cc and
// docs/benchmarks.md). Small scopes are scanned exactly; once a scope has `hnsw_threshold`
// vectors an HNSW graph (hnswlib, over the same int8 codes) answers unfiltered queries. Filtered
// queries always scan exactly, so a filter never loses results that a truncated ANN top-k would
// have dropped.
//
// Thread-safety: not thread-safe. The owner (a shard) serialises writers against readers;
// concurrent const calls are safe when no writer runs.
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
};

}  // namespace engram
