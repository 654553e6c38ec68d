// RetrievalOptions: how a shard ranks memories for a query. Defaults are the shipped behaviour;
// docs/benchmarks.md explains how they were chosen.
#pragma once

#include <cstddef>
#include <string>

#include "core/conversation_excerpts.h"
#include "index/fusion.h"

namespace engram {

enum class RetrievalMode {
  kHybrid,  // BM25 and vectors, fused
  kBm25,    // BM25 only (baseline for benchmarks)
  kVector,  // vectors only (baseline for benchmarks)
};

struct RetrievalOptions {
  RetrievalMode mode = RetrievalMode::kHybrid;
  FusionOptions fusion;
  // fusion.vector_weight for a query that names a code identifier (NamesCodeIdentifier): the
  // sentence encoder places passages of other files that look alike near such a query, while
  // BM25 finds the identifier itself (ForQuery).
  float identifier_vector_weight = 0.1f;
  // Candidates taken from each retriever before fusion: at least k, and with excerpts at least k
  // times the turns an excerpt may show, since each excerpt absorbs the ranked turns it shows.
  size_t candidates = 200;
  // Each ranked hit is followed by up to this many turns before and after it in its session:
  // answers often sit in the reply to (or the question before) the best-matching turn.
  int neighbours = 1;
  // Neighbours longer than this (characters) are not pulled in: they would spend an answering
  // model's token budget on text that did not match the query itself.
  size_t neighbour_max_chars = 800;
  // Neighbours get this fraction of the score of the hit that pulled them in.
  float neighbour_score_factor = 0.9f;
  // Short turns that ask (their text ends with a question mark and has at most
  // question_max_chars bytes) keep question_factor of their own score, but lend their full score
  // to their neighbours, and their reply (the next turn) inherits reply_score_factor of it: such a
  // question shares the words of a query about its topic, while the answer is in the reply.
  // Longer asking turns usually state something before they ask (a few sentences about the
  // user, then a request) and are ranked like any other. question_factor 1 and
  // reply_score_factor equal to neighbour_score_factor turn this off.
  float question_factor = 0.9f;
  float reply_score_factor = 1.0f;
  size_t question_max_chars = 150;
  // Where neighbours go: right after their hit (kAfterHit), or ranked among all results by the
  // score they inherit (kByScore), so the neighbours of a weak hit do not push down a strong one.
  enum class NeighbourPlacement { kAfterHit, kByScore };
  NeighbourPlacement neighbour_placement = NeighbourPlacement::kByScore;
  // Conversation windows for BM25: a turn is scored per query term by the best of its own
  // contribution and this share of its previous / next turn's (in its session), so a reply that
  // answers a question ("Definitely! And some old friends.") matches the words of the question
  // it answers, and a question matches its answer. 0 scores each turn alone.
  float window_share = 0.5f;
  // Dates the query names ("on 11 December, 2023", "in June 2022"): turns from that range gain
  // time_weight x the best fused score; the gain fades linearly over time_days_before before the
  // range and time_days_after after it (people talk about an event in the days after it). 0 off.
  float time_weight = 0.8f;
  int time_days_before = 3;
  int time_days_after = 14;
  // Leaderboard results need evidence of relevance: a turn is returned only if it (or its
  // conversation window) shares a query term, or its cosine with the query is at least this
  // (HybridQuery::relevance_floor), or it is the neighbour of such a turn. Without it every turn
  // of a small scope comes back for any query, down to top_k. 0 off. 0.30 is the highest floor
  // tried that costs the dev sets at most .002 of recall@100 (docs/benchmarks.md).
  float relevance_floor = 0.30f;
  // Leaderboard results as conversation excerpts (core/conversation_excerpts.h): each result is
  // its matched turn with the turns of its session around it, adjacent hits merged, no turn
  // twice. Off: a result is one turn. Scopes that hold long messages (passages) answer with
  // excerpts of those messages either way.
  bool excerpts = false;
  ExcerptOptions excerpt;
};

// "hybrid" | "bm25" | "vector"; false on anything else.
bool ParseRetrievalMode(const std::string& text, RetrievalMode* mode);

// The options a query ranks with: the identifier weight on the vector side when it names a code
// identifier (NamesCodeIdentifier(query), from index/question_form.h).
inline RetrievalOptions ForQuery(RetrievalOptions options, bool names_identifier) {
  if (names_identifier) options.fusion.vector_weight = options.identifier_vector_weight;
  return options;
}

}  // namespace engram
