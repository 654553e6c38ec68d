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
    // earlier, better result) and at the budgets.
    DocId first = hit.doc;
    for (size_t i = 0; i < options.turns_before; ++i) {
      const DocId p = order.prev(first);
      if (p == TurnOrder::kNone || shown.count(p) != 0 || !fits(b.bytes, bytes(p))) break;
      b.turns.push_front(p);
      b.bytes += bytes(p);
      answer_bytes += bytes(p);
      first = p;
    }
    DocId last = hit.doc;
    for (size_t i = 0; i < options.turns_after; ++i) {
      const DocId n = order.next(last);
      if (n == TurnOrder::kNone || shown.count(n) != 0 || !fits(b.bytes, bytes(n))) break;
      b.turns.push_back(n);
      b.bytes += bytes(n);
      answer_bytes += bytes(n);
      last = n;
    }
    // Touching an earlier excerpt (its last turn just before ours, or its first just after):
    // one excerpt, at the earlier one's rank, if it stays within the result budget.
    size_t into = built.size();
    if (const DocId p = order.prev(first); p != TurnOrder::kNone) {
      auto it = shown.find(p);
      if (it != shown.end() && built[it->second].turns.back() == p &&
          built[it->second].bytes + b.bytes <= options.max_result_bytes) {
        into = it->second;
      }
    }
    if (into == built.size()) {
      if (const DocId n = order.next(last); n != TurnOrder::kNone) {
        auto it = shown.find(n);
        if (it != shown.end() && built[it->second].turns.front() == n &&
            built[it->second].bytes + b.bytes <= options.max_result_bytes) {
          into = it->second;
        }
      }
    }
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
