// Reranker: an optional second opinion on the order of search results, applied to the best few
// candidates of a search (the Leaderboard's answering model reads results in order, and what comes
// first weighs most). Off by default; the offline ranking stands on its own.
//
// Thread-safety: implementations are safe to call concurrently.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"

namespace engram {

class Reranker {
 public:
  virtual ~Reranker() = default;

  // Indices into `candidates` (each once), most relevant to `query` first. It may leave out
  // candidates it judges irrelevant: the caller keeps those after the ranked ones, in their
  // original order. An error means "no opinion": the caller keeps its own order.
  virtual Result<std::vector<size_t>> Rerank(
      const std::string& query, const std::vector<std::string_view>& candidates) const = 0;
};

}  // namespace engram
