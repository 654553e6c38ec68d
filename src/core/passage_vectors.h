// The vectors of Leaderboard messages, one per passage (index/passages.h): what a message's stored
// vector holds and how a shard reads it back.
//
// A message of one passage has one vector, as before passages existed. A longer message has one
// vector per passage, concatenated in passage order into its one stored vector (dimension ×
// passages floats). A stored vector of any other length (a whole-message vector written before
// the message was cut, or another cut) fits none of its passages: the shard leaves them without
// vectors and the backfill embeds them again.
//
// Thread-safety: pure functions, apart from the embedder's own (thread-safe) model.
#pragma once

#include <span>
#include <string>
#include <vector>

#include "common/status.h"
#include "embed/embedder.h"
#include "index/passages.h"

namespace engram {

// Each text's stored vector: its passages embedded (all texts' passages in one EmbedBatch; each
// passage with its message's title, PassageEmbeddingText) and concatenated.
Result<std::vector<std::vector<float>>> EmbedPassages(const Embedder& embedder,
                                                      const std::vector<std::string>& texts);

// Passage `i`'s vector within `stored` (a message of `passages` passages, vectors of `dim`
// values); empty when `stored` does not hold one vector per passage.
std::span<const float> PassageVector(std::span<const float> stored, size_t passages, size_t i,
                                     size_t dim);

}  // namespace engram
