// Windowed BM25: BM25 over conversation windows. Each query term scores a turn by the best of its
// own contribution and `share` × the contribution of the turn before or after it (TurnOrder), so a
// reply that answers a question ("Definitely! And some old friends.") matches the words of the
// question it answers, and a question matches its answer. share 0 is plain BM25.
//
// Thread-safety: a pure function of its arguments (the caller holds the shard's reader lock);
// its scratch space is thread_local.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "index/bm25_index.h"
#include "index/turn_order.h"

namespace engram {

// Which turns a windowed search may score and return (both optional).
struct WindowFilter {
  // Cheap and asked of every posting: turns outside are ignored, as if absent from the index.
  // A turn's neighbours must be in scope whenever it is (they share its conversation and scope).
  const std::function<bool(DocId)>* in_scope = nullptr;
  // Asked lazily, only of turns good enough to be returned; the caller may memoise it. A turn
  // it rejects is not returned, but still lends its words to the neighbours it shares a window
  // with (it is part of their conversation).
  const std::function<bool(DocId)>* admits = nullptr;
};

// The best `k` turns by window score, best first. `slot_count` bounds the slots of `bm25` and
// `order` (HybridIndex::slot_count); `stats`, when given, are the BM25 statistics to score with.
std::vector<ScoredDoc> WindowedBm25(const Bm25Index& bm25, const TurnOrder& order,
                                    size_t slot_count, const std::vector<std::string>& terms,
                                    size_t k, float share, const WindowFilter& filter = {},
                                    const Bm25Stats* stats = nullptr);

}  // namespace engram
