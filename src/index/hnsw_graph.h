// HnswGraph: the HNSW graph (hnswlib) over int8 vector codes that VectorIndex searches once a
// scope is large, and the file that keeps it between a scope's loads.
//
// An element is [float scale][int8 code * dim] (PackElement), labelled with its DocId. Building a
// graph costs minutes at a million vectors while the codes load in seconds, so a graph is saved
// beside the store when its scope is dropped from memory or the server stops, and taken back on
// the scope's next load. DocIds are given out in load order and may differ from one load to the
// next, so a saved graph is matched to the loaded vectors by content: every element whose
// [scale][code] equals a loaded vector's is relabelled with that vector's DocId (Relabel); the
// others are marked deleted. The file is a cache: any doubt about it (another format, dimension or
// parameters, a size or checksum that does not match, links out of range) means building anew.
//
// The file is hnswlib's own layout, written here with every write checked and the codes of
// deleted elements zeroed (a removed memory leaves no vector behind in the file), beside a small
// `<path>.meta` holding the format, parameters, size and a checksum: the sum of the hashes of
// its 1 MiB blocks, so a vector removed or replaced after the save can be zeroed in the file in
// place (ZeroSavedElements) at the cost of rewriting the blocks it lies in. Both are written to
// temporary names and renamed into place, the graph first; a reader that meets a half-replaced
// pair sees a checksum mismatch and builds anew.
//
// Thread-safety: as hnswlib: Add may run from several threads at once (per-element locks);
// Reserve, Remove, Relabel and Save need the graph to themselves; Search may run concurrently with
// other searches. Load and the free functions are thread-safe.
#pragma once

#include <cstddef>
#include <cstdint>
#include <limits>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "common/status.h"
#include "index/bm25_index.h"

namespace engram {

struct HnswGraphOptions {
  int dim = 512;
  int m = 16;
  int ef_construction = 100;
  int ef_search = 96;
};

// Bytes of one element: [float scale][int8 code * dim].
inline size_t ElementBytes(int dim) { return sizeof(float) + static_cast<size_t>(dim); }
// Writes one element to `out` (ElementBytes(dim) bytes).
void PackElement(char* out, float scale, const int8_t* code, int dim);
// A 64-bit hash of an element's bytes: what a loaded graph's elements and the loaded vectors are
// matched by (equal bytes, equal hash).
uint64_t ElementHash(const char* element, int dim);
// The checksum a saved graph's record holds for the graph file at `path`.
Result<uint64_t> GraphFileChecksum(const std::string& path);

class HnswGraph {
 public:
  // Relabel's mark for an element no loaded vector matches.
  static constexpr DocId kNoDoc = std::numeric_limits<DocId>::max();

  // An empty graph with room for `capacity` elements. Throws (std::bad_alloc or
  // std::runtime_error) when the memory cannot be had.
  HnswGraph(const HnswGraphOptions& options, size_t capacity);
  ~HnswGraph();
  HnswGraph(const HnswGraph&) = delete;
  HnswGraph& operator=(const HnswGraph&) = delete;

  // The graph saved at `path`, with room for at least `capacity` elements. NotFound when there is
  // none; another error when the file is not a graph of `options` (see the file comment).
  static Result<std::unique_ptr<HnswGraph>> Load(const std::string& path,
                                                 const HnswGraphOptions& options, size_t capacity);
  // Writes the graph to `path` (and `path`.meta). Refuses (kUnavailable) when the file system
  // would keep less than the file's size free after writing it: a cache never takes the space an
  // acknowledged write needs.
  Status Save(const std::string& path) const;
  // Removes a saved graph (its files, temporary ones included, each overwritten with zeros
  // first); absent files, and an empty path, are not an error.
  static void RemoveSaved(const std::string& path);
  // Overwrites the [scale][code] of each of `elements` in the graph saved at `path` with zeros
  // and updates the record's checksum: a removed or replaced vector leaves no code behind while
  // the rest of the file stays usable (a later load takes a zeroed element as stale).
  // Reads and writes each 1 MiB block holding one once; not synced. On an error the file may be
  // left unusable: the caller removes it (RemoveSaved).
  static Status ZeroSavedElements(const std::string& path, std::vector<size_t> elements);

  // Room for `more` insertions, in one reallocation that at least doubles the capacity.
  void Reserve(size_t more);
  // `element` as PackElement writes it; an existing doc is replaced. Callers Reserve first.
  void Add(const char* element, DocId doc);
  void Remove(DocId doc);
  // The k nearest, best first, as (doc, cosine).
  std::vector<ScoredDoc> Search(const char* element, size_t k) const;
  size_t MemoryBytes() const;

  // Elements stored, deleted ones included, and element i's bytes (PackElement's layout).
  size_t elements() const;
  bool deleted(size_t i) const;
  const char* element(size_t i) const;
  // The element labelled `doc` (deleted or not), if any. May run beside Add.
  std::optional<size_t> ElementOf(DocId doc);
  // Gives element i the label labels[i] (one per element, each DocId at most once); kNoDoc marks
  // it deleted. Every former label is forgotten.
  void Relabel(const std::vector<DocId>& labels);

 private:
  struct Impl;
  explicit HnswGraph(std::unique_ptr<Impl> impl);
  // Checks what loadIndex does not and the header check before it cannot: every link and the
  // entry point in range, list sizes within their maxima.
  Status CheckLoaded() const;

  std::unique_ptr<Impl> impl_;
};

}  // namespace engram
