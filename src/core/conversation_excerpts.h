// Conversation excerpts: a ranked list of turns made into results that each show a run of
// consecutive turns of one session (the matched turn with the turns around it), so that an
// answering model reads who said what, in reply to what, and when. Hits that are adjacent merge
// into one excerpt; a turn appears at most once in an answer; the results stay in the order of
// their best turn, within `k` items and a byte budget per result and per answer. Optionally a
// lead of the best matched turns, each alone, comes first, and the turns around them next.
//
// Thread-safety: a pure function of its arguments (the caller holds its shard's reader lock).
#pragma once

#include <cstddef>
#include <functional>
#include <vector>

#include "index/bm25_index.h"
#include "index/turn_order.h"

namespace engram {

struct ExcerptOptions {
  // Turns of context taken before and after a matched turn (fewer at a session's ends, at a turn
  // an earlier result already shows, or at the budgets).
  size_t turns_before = 5;
  size_t turns_after = 5;
  // Context stops where a result's turns would exceed this many bytes of text (a matched turn is
  // shown whatever its length), and where the answer's would exceed answer_max_bytes.
  size_t max_result_bytes = 8192;
  size_t answer_max_bytes = 96 << 10;
  // The first lead_results results show their matched turn alone (adjacent matches too); the
  // turns around each follow them, before the other matches' excerpts. A reader of the first
  // results sees as many matches as one turn per result gives, and all results the context.
  size_t lead_results = 0;
};

struct ConversationExcerpt {
  std::vector<DocId> turns;  // consecutive turns of one session, in conversation order
  size_t anchor = 0;         // index in `turns` of the result's best matched turn
  float score = 0;           // that turn's score
};

// At most `k` excerpts from `ranked` (best first; every element a turn of `order`, or a document
// outside any session, which stays a result of its own). A ranked turn that an earlier excerpt
// already shows adds nothing; one whose context touches an earlier excerpt extends it while the
// extended excerpt stays within max_result_bytes. `bytes(turn)`: the turn's text length.
std::vector<ConversationExcerpt> AssembleExcerpts(const std::vector<ScoredDoc>& ranked, size_t k,
                                                  const TurnOrder& order,
                                                  const std::function<size_t(DocId)>& bytes,
                                                  const ExcerptOptions& options);

}  // namespace engram
