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
  // Makes `turn` a result with up to `before` / `after` turns of context, or joins it to an
  // earlier result at index `merge_from` or later that it touches.
  const auto place = [&](DocId turn, float score, size_t before, size_t after, size_t merge_from) {
    const size_t own = bytes(turn);
    Building b{{turn}, turn, score, own};
    answer_bytes += own;
    // Context before, then after; each side stops at a turn already shown (it belongs to an
    // earlier, better result) and at the budgets. Returns the excerpt's turn at that end.
    const auto take = [&](size_t turns, bool backwards) {
      DocId edge = turn;
      for (size_t i = 0; i < turns; ++i) {
        const DocId t = backwards ? order.prev(edge) : order.next(edge);
        if (t == TurnOrder::kNone || shown.count(t) != 0 || !fits(b.bytes, bytes(t))) break;
        backwards ? b.turns.push_front(t) : b.turns.push_back(t);
        b.bytes += bytes(t);
        answer_bytes += bytes(t);
        edge = t;
      }
      return edge;
    };
    const DocId first = take(before, true);
    const DocId last = take(after, false);
    // Touching an earlier excerpt (its last turn just before ours, or its first just after):
    // one excerpt, at the earlier one's rank, if it stays within the result budget.
    const auto touching = [&](DocId beyond, bool its_last) {
      auto it = beyond == TurnOrder::kNone ? shown.end() : shown.find(beyond);
      if (it == shown.end() || it->second < merge_from) return built.size();
      const Building& e = built[it->second];
      const bool adjacent = (its_last ? e.turns.back() : e.turns.front()) == beyond;
      return adjacent && e.bytes + b.bytes <= options.max_result_bytes ? it->second : built.size();
    };
    size_t into = touching(order.prev(first), true);
    if (into == built.size()) into = touching(order.next(last), false);
    if (into == built.size()) {
      for (DocId t : b.turns) shown.emplace(t, into);
      built.push_back(std::move(b));
      return;
    }
    Building& e = built[into];
    if (e.turns.back() == order.prev(first)) {
      e.turns.insert(e.turns.end(), b.turns.begin(), b.turns.end());
    } else {
      e.turns.insert(e.turns.begin(), b.turns.begin(), b.turns.end());
    }
    e.bytes += b.bytes;
    for (DocId t : b.turns) shown.emplace(t, into);
  };

  // The lead: the best matched turns, each alone (adjacent ones too: joined, a run of matches
  // would grow one result and push the next matches back), as one turn per result ranks them.
  const size_t lead_wanted = std::min(options.lead_results, k);
  constexpr size_t kJoinNone = static_cast<size_t>(-1);
  size_t next = 0;
  for (; next < ranked.size() && built.size() < lead_wanted; ++next) {
    if (shown.count(ranked[next].doc) == 0) {
      place(ranked[next].doc, ranked[next].score, 0, 0, kJoinNone);
    }
  }
  const size_t lead = built.size();
  // Then the lead's context, best lead result first: the turns before it and the turns after it,
  // each run a result of its own (the lead turn is not shown again). Joins only results after the
  // lead, which stays as dense as it was. Context, unlike a match, is shown only within the
  // budgets, the run's first turn included.
  const auto context_from = [&](DocId t) {
    return t != TurnOrder::kNone && shown.count(t) == 0 && built.size() < k && fits(0, bytes(t));
  };
  for (size_t i = 0; i < lead && built.size() < k; ++i) {
    const float score = built[i].score;
    const DocId before = order.prev(built[i].turns.front());
    const DocId after = order.next(built[i].turns.back());
    if (options.turns_before > 0 && context_from(before)) {
      place(before, score, options.turns_before - 1, 0, lead);
    }
    if (options.turns_after > 0 && context_from(after)) {
      place(after, score, 0, options.turns_after - 1, lead);
    }
  }
  for (; next < ranked.size(); ++next) {
    const ScoredDoc& hit = ranked[next];
    if (shown.count(hit.doc) != 0) continue;
    // Full: a later hit can still only be one the answer shows, which adds nothing.
    if (built.size() == k) break;
    place(hit.doc, hit.score, options.turns_before, options.turns_after, lead);
  }
  std::vector<ConversationExcerpt> out;
  out.reserve(built.size());
  for (Building& b : built) {
    ConversationExcerpt e;
    e.turns.assign(b.turns.begin(), b.turns.end());
    e.anchor =
        static_cast<size_t>(std::find(e.turns.begin(), e.turns.end(), b.anchor) - e.turns.begin());
    // A lead's context carries the lead result's score; no result outscores one before it.
    e.score = out.empty() ? b.score : std::min(b.score, out.back().score);
    out.push_back(std::move(e));
  }
  return out;
}

}  // namespace engram
