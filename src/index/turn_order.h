// TurnOrder: the optional ordering capability of a HybridIndex's documents: each group (a
// conversation session) keeps its documents in conversation order, and every document knows the
// one before and after it. Windowed BM25 (a turn scored with its neighbours' words) and neighbour
// expansion (a hit brings the turns around it) walk these links.
//
// Slots are those of the HybridIndex beside it; Insert places a slot at its turn's place even when
// turns arrive out of order (chunks of one conversation written by several requests), and Remove
// takes a slot out, linking its neighbours to each other.
//
// Thread-safety: not thread-safe; the owning shard serialises writers against readers, and
// concurrent const calls are safe when no writer runs.
#pragma once

#include <algorithm>
#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "common/memory_bytes.h"
#include "index/bm25_index.h"

namespace engram {

class TurnOrder {
 public:
  static constexpr DocId kNone = UINT32_MAX;

  // Places `slot` (not in any group: new, or removed) into `group` after every turn `before`
  // ranks ahead of it. `before(a, b)`: whether turn a comes before turn b.
  template <typename Before>
  void Insert(DocId slot, std::string_view group, Before&& before) {
    if (prev_.size() <= slot) {
      prev_.resize(slot + 1, kNone);
      next_.resize(slot + 1, kNone);
      group_of_.resize(slot + 1, nullptr);
    }
    auto [entry, unused] = groups_.try_emplace(std::string(group));
    group_of_[slot] = &entry->first;
    auto& turns = entry->second;
    auto at = std::upper_bound(turns.begin(), turns.end(), slot, before);
    const DocId p = at == turns.begin() ? kNone : *(at - 1);
    const DocId n = at == turns.end() ? kNone : *at;
    turns.insert(at, slot);
    prev_[slot] = p;
    next_[slot] = n;
    if (p != kNone) next_[p] = slot;
    if (n != kNone) prev_[n] = slot;
  }

  // Takes `slot` out of its group (a no-op when it is in none); its neighbours become adjacent.
  void Remove(DocId slot) {
    if (slot >= group_of_.size() || group_of_[slot] == nullptr) return;
    auto group = groups_.find(*group_of_[slot]);
    std::vector<DocId>& turns = group->second;
    turns.erase(std::find(turns.begin(), turns.end(), slot));
    const DocId p = prev_[slot], n = next_[slot];
    if (p != kNone) next_[p] = n;
    if (n != kNone) prev_[n] = p;
    prev_[slot] = next_[slot] = kNone;
    group_of_[slot] = nullptr;
    if (turns.empty()) groups_.erase(group);
  }
  bool contains(DocId slot) const { return slot < group_of_.size() && group_of_[slot] != nullptr; }

  // The turn before / after `slot` in its group; kNone at either end or for an unknown slot.
  DocId prev(DocId slot) const { return slot < prev_.size() ? prev_[slot] : kNone; }
  DocId next(DocId slot) const { return slot < next_.size() ? next_[slot] : kNone; }

  size_t group_count() const { return groups_.size(); }
  // Approximate resident bytes: the links and the groups' turn lists.
  size_t MemoryBytes() const {
    size_t bytes = (prev_.capacity() + next_.capacity()) * sizeof(DocId) +
                   group_of_.capacity() * sizeof(void*) + groups_.bucket_count() * sizeof(void*);
    for (const auto& [group, turns] : groups_) {
      bytes += kHashNodeBytes + sizeof(*groups_.begin()) + StringHeapBytes(group) +
               turns.capacity() * sizeof(DocId);
    }
    return bytes;
  }

 private:
  std::unordered_map<std::string, std::vector<DocId>> groups_;  // each in conversation order
  std::vector<DocId> prev_, next_;                              // per slot
  std::vector<const std::string*> group_of_;  // per slot: its group's key in groups_, or null
};

}  // namespace engram
