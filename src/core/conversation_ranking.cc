#include "core/conversation_ranking.h"

#include <algorithm>
#include <unordered_set>

namespace engram {

namespace {

// Calls fn(neighbour, reply) for each turn within options.neighbours of `doc` in its session,
// skipping long ones and those `admits` rejects; `reply` is true for the turn right after `doc`.
template <typename Fn>
void ForEachNeighbour(DocId doc, const RetrievalOptions& options, const TurnOrder& order,
                      const std::function<TurnFacts(DocId)>& facts,
                      const std::function<bool(DocId)>* admits, Fn&& fn) {
  DocId before = doc, after = doc;
  for (int step = 1; step <= options.neighbours; ++step) {
    if (before != TurnOrder::kNone) before = order.prev(before);
    if (after != TurnOrder::kNone) after = order.next(after);
    for (DocId nd : {before, after}) {
      if (nd == TurnOrder::kNone || facts(nd).chars > options.neighbour_max_chars) continue;
      if (admits != nullptr && !(*admits)(nd)) continue;
      fn(nd, step == 1 && nd == after);
    }
  }
}

}  // namespace

float DateCloseness(int64_t t, const TimeRange& range, const RetrievalOptions& options) {
  constexpr double kDay = 86400.0 * 1e6;
  if (t >= range.begin_us && t < range.end_us) return 1.0f;
  const double days = t < range.begin_us ? (range.begin_us - t) / kDay : (t - range.end_us) / kDay;
  const int fade = t < range.begin_us ? options.time_days_before : options.time_days_after;
  if (fade <= 0 || days >= fade) return 0.0f;
  return static_cast<float>(1.0 - days / fade);
}

std::vector<ScoredDoc> WithNeighbours(const std::vector<ScoredDoc>& ranked, size_t k,
                                      const RetrievalOptions& options, const TurnOrder& order,
                                      size_t slot_count,
                                      const std::function<TurnFacts(DocId)>& facts,
                                      const std::function<bool(DocId)>* admits) {
  if (options.neighbours > 0 &&
      options.neighbour_placement == RetrievalOptions::NeighbourPlacement::kByScore) {
    // Every candidate lends factor × its score to its neighbours; each document keeps the best of
    // its own score and what it was lent; then everything is ranked together. `slot` maps a
    // document to its entry in `all` (per-thread scratch, reset after use, so a search does not
    // allocate a hash table: it cost ~3 % of a hybrid search's CPU).
    constexpr uint32_t kNoSlot = UINT32_MAX;
    thread_local std::vector<uint32_t> slot;
    if (slot.size() < slot_count) slot.resize(slot_count, kNoSlot);
    std::vector<ScoredDoc> all;
    all.reserve(ranked.size() * 3);
    auto offer = [&](DocId d, float score) {
      if (slot[d] == kNoSlot) {
        slot[d] = static_cast<uint32_t>(all.size());
        all.push_back({d, score});
      } else {
        float& best = all[slot[d]].score;
        best = std::max(best, score);
      }
    };
    for (const auto& hit : ranked) {
      const TurnFacts turn = facts(hit.doc);
      const bool asks = turn.asks && turn.chars <= options.question_max_chars;
      offer(hit.doc, asks ? hit.score * options.question_factor : hit.score);
      const float lent = hit.score * options.neighbour_score_factor;
      const float to_reply = asks ? hit.score * options.reply_score_factor : lent;
      ForEachNeighbour(hit.doc, options, order, facts, admits,
                       [&](DocId nd, bool reply) { offer(nd, reply ? to_reply : lent); });
    }
    for (const ScoredDoc& s : all) slot[s.doc] = kNoSlot;
    KeepTopK(all, k);
    return all;
  }
  std::vector<ScoredDoc> out;
  out.reserve(k);
  std::unordered_set<DocId> taken;
  // Scores stay non-increasing in rank order: a neighbour placed after its hit never shows a
  // higher score than what comes before it.
  auto take = [&](DocId d, float score) {
    if (out.size() >= k || !taken.insert(d).second) return;
    if (!out.empty()) score = std::min(score, out.back().score);
    out.push_back({d, score});
  };
  for (const auto& hit : ranked) {
    if (out.size() >= k) break;
    take(hit.doc, hit.score);
    if (options.neighbours <= 0) continue;
    const float score = hit.score * options.neighbour_score_factor;
    ForEachNeighbour(hit.doc, options, order, facts, admits,
                     [&](DocId nd, bool) { take(nd, score); });
  }
  return out;
}

}  // namespace engram
