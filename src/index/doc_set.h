// A set of documents gathered from result lists: membership, the members in DocId order, and each
// member's rank among them, for fusion's per-candidate arrays and the relevance floor's check.
// Thread-safety: none; each search builds its own. Owns its storage.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "index/bm25_index.h"

namespace engram {

class DocSet {
 public:
  // Gathers ids in any order, repeats allowed; Seal() once before any read.
  void Add(DocId doc) { ids_.push_back(doc); }
  void Add(const std::vector<ScoredDoc>& list);
  void Seal();

  size_t size() const { return ids_.size(); }
  // The i-th smallest member.
  DocId id(size_t i) const { return ids_[i]; }
  bool contains(DocId doc) const;
  // How many members are smaller than `doc`: a member's index in DocId order.
  size_t rank(DocId doc) const;

 private:
  // Members in increasing order (gathered ids until Seal).
  std::vector<DocId> ids_;
  // Dense sets (the usual case: a scope's DocIds run from 0 and a search gathers hundreds to a
  // few thousand of them) keep a bitmap over [0, largest member] with the count of members
  // before each 64-bit word, so membership and rank cost a word and a popcount. A sparse set
  // (few members of a large index) leaves these empty and binary-searches `ids_`.
  std::vector<uint64_t> words_;
  std::vector<uint32_t> before_;
};

}  // namespace engram
