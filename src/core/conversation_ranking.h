// Conversation ranking: the retrieval steps that make use of a conversation's order, shared by
// every shard whose documents are turns of sessions (Leaderboard scopes, V4 verbatim memories):
// neighbour expansion (a hit brings the turns around it, which often hold the answer), the
// question factor (a short asking turn lends its score to its reply), and the date prior (turns
// near a date the query names gain). The windowed BM25 they pair with is index/windowed_bm25.h.
// RetrievalOptions documents each step and its measured effect.
//
// Thread-safety: pure functions of their arguments (the caller holds its shard's reader lock).
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

#include "core/retrieval_options.h"
#include "index/bm25_index.h"
#include "index/query_dates.h"
#include "index/turn_order.h"

namespace engram {

// What the ranking needs to know of a turn.
struct TurnFacts {
  size_t chars = 0;   // text length in bytes
  bool asks = false;  // the text ends with a question mark (EndsWithQuestion)
};

// 0..1: how close a turn's time is to the range a query names (1 inside, fading linearly over
// options.time_days_before / time_days_after outside).
float DateCloseness(int64_t time_us, const TimeRange& range, const RetrievalOptions& options);

// The best `k` of `ranked` (fused, best first) and their neighbours in `order`, by
// options.neighbour_placement. `facts(slot)` describes a turn; `admits` (may be null) must
// accept a neighbour before it is offered (a filtered search returns only what matches).
// `slot_count` bounds the slots of `ranked` and `order`.
std::vector<ScoredDoc> WithNeighbours(const std::vector<ScoredDoc>& ranked, size_t k,
                                      const RetrievalOptions& options, const TurnOrder& order,
                                      size_t slot_count,
                                      const std::function<TurnFacts(DocId)>& facts,
                                      const std::function<bool(DocId)>* admits = nullptr);

}  // namespace engram
