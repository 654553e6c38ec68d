#include "index/doc_set.h"

#include <algorithm>
#include <bit>

namespace engram {

namespace {

// A bitmap is used while it has at most this many words per member: clearing and walking it
// then costs about what sorting the members would, and membership and rank become O(1).
constexpr size_t kWordsPerMember = 16;

}  // namespace

void DocSet::Add(const std::vector<ScoredDoc>& list) {
  ids_.reserve(ids_.size() + list.size());
  for (const ScoredDoc& s : list) ids_.push_back(s.doc);
}

void DocSet::Seal() {
  words_.clear();
  before_.clear();
  if (ids_.empty()) return;
  const DocId largest = *std::max_element(ids_.begin(), ids_.end());
  const size_t words = static_cast<size_t>(largest) / 64 + 1;
  if (words > kWordsPerMember * ids_.size()) {
    std::sort(ids_.begin(), ids_.end());
    ids_.erase(std::unique(ids_.begin(), ids_.end()), ids_.end());
    return;
  }
  words_.assign(words, 0);
  for (const DocId d : ids_) words_[d / 64] |= uint64_t{1} << (d % 64);
  before_.resize(words);
  ids_.clear();
  for (size_t w = 0; w < words; ++w) {
    before_[w] = static_cast<uint32_t>(ids_.size());
    for (uint64_t bits = words_[w]; bits != 0; bits &= bits - 1) {
      ids_.push_back(static_cast<DocId>(w * 64 + static_cast<size_t>(std::countr_zero(bits))));
    }
  }
}

bool DocSet::contains(DocId doc) const {
  if (words_.empty()) return std::binary_search(ids_.begin(), ids_.end(), doc);
  const size_t w = doc / 64;
  return w < words_.size() && (words_[w] >> (doc % 64) & 1) != 0;
}

size_t DocSet::rank(DocId doc) const {
  if (words_.empty()) {
    return static_cast<size_t>(std::lower_bound(ids_.begin(), ids_.end(), doc) - ids_.begin());
  }
  const size_t w = doc / 64;
  if (w >= words_.size()) return ids_.size();
  const uint64_t below = words_[w] & ((uint64_t{1} << (doc % 64)) - 1);
  return before_[w] + static_cast<size_t>(std::popcount(below));
}

}  // namespace engram
