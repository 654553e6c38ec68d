#include "core/conversation_excerpts.h"

#include <algorithm>
#include <deque>
#include <unordered_map>

namespace engram {

namespace {

// An excerpt under construction: its turns in order, and its bytes.
struct Building {
  std::deque<DocId> turns;
  DocId anchor = 0;
  float score = 0;
  size_t bytes = 0;
};

}  // namespace

std::vector<ConversationExcerpt> AssembleExcerpts(const std::vector<ScoredDoc>& ranked, size_t k,
                                                  const TurnOrder& order,
                                                  const std::function<size_t(DocId)>& bytes,
                                                  const ExcerptOptions& options) {
  std::vector<Building> built;
  std::unordered_map<DocId, size_t> shown;  // turn -> index in `built` of the excerpt showing it
  size_t answer_bytes = 0;
  const auto fits = [&](size_t excerpt_bytes, size_t more) {
    return excerpt_bytes + more <= options.max_result_bytes &&
           answer_bytes + more <= options.answer_max_bytes;
  };
  for (const ScoredDoc& hit : ranked) {
    if (shown.count(hit.doc) != 0) continue;
    if (built.size() == k) {
      // Full: a later hit can still only be one the answer shows, which adds nothing.
      break;
    }
    const size_t own = bytes(hit.doc);
    Building b{{hit.doc}, hit.doc, hit.score, own};
    answer_bytes += own;
    // Context before, then after; each side stops at a turn already shown (it belongs to an
    // earlier, better result) and at the budgets. Returns the excerpt's turn at that end.
    const auto take = [&](size_t turns, bool before) {
      DocId edge = hit.doc;
      for (size_t i = 0; i < turns; ++i) {
        const DocId t = before ? order.prev(edge) : order.next(edge);
        if (t == TurnOrder::kNone || shown.count(t) != 0 || !fits(b.bytes, bytes(t))) break;
        before ? b.turns.push_front(t) : b.turns.push_back(t);
        b.bytes += bytes(t);
        answer_bytes += bytes(t);
        edge = t;
      }
      return edge;
    };
    const DocId first = take(options.turns_before, true);
    const DocId last = take(options.turns_after, false);
    // Touching an earlier excerpt (its last turn just before ours, or its first just after):
    // one excerpt, at the earlier one's rank, if it stays within the result budget.
    const auto touching = [&](DocId beyond, bool its_last) {
      auto it = beyond == TurnOrder::kNone ? shown.end() : shown.find(beyond);
      if (it == shown.end()) return built.size();
      const Building& e = built[it->second];
      const bool adjacent = (its_last ? e.turns.back() : e.turns.front()) == beyond;
      return adjacent && e.bytes + b.bytes <= options.max_result_bytes ? it->second : built.size();
    };
    size_t into = touching(order.prev(first), true);
    if (into == built.size()) into = touching(order.next(last), false);
    if (into == built.size()) {
      for (DocId t : b.turns) shown.emplace(t, into);
      built.push_back(std::move(b));
      continue;
    }
    Building& e = built[into];
    if (e.turns.back() == order.prev(first)) {
      e.turns.insert(e.turns.end(), b.turns.begin(), b.turns.end());
    } else {
      e.turns.insert(e.turns.begin(), b.turns.begin(), b.turns.end());
    }
    e.bytes += b.bytes;
    for (DocId t : b.turns) shown.emplace(t, into);
  }
  std::vector<ConversationExcerpt> out;
  out.reserve(built.size());
  for (Building& b : built) {
    ConversationExcerpt e;
    e.turns.assign(b.turns.begin(), b.turns.end());
    e.anchor =
        static_cast<size_t>(std::find(e.turns.begin(), e.turns.end(), b.anchor) - e.turns.begin());
    e.score = b.score;
    out.push_back(std::move(e));
  }
  return out;
}

}  // namespace engram
