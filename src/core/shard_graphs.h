// Where a shard keeps its vector graph between loads (VectorIndex::SaveGraph): one file per
// shard in the server's graph directory (<data-dir>/graphs), named by its domain and a hash of its
// cache key, so the name tells neither the workspace nor the user.
//
// Thread-safety: a pure function.
#pragma once

#include <chrono>
#include <string>
#include <string_view>

#include "common/status.h"
#include "core/shard_budget.h"
#include "index/vector_index.h"

namespace engram {

// "<dir>/<domain>-<16 hex digits>.hnsw"; "" when `dir` is "" (graphs are not kept).
std::string ShardGraphPath(const std::string& dir, ShardDomain domain, std::string_view key);

// A shard's vector options for the shard of `key`: its graph file (ShardGraphPath) and a log line
// when its graph first answers (vectors, how many came from the saved graph, seconds).
void SetShardGraph(VectorIndexOptions* vectors, const std::string& dir, ShardDomain domain,
                   std::string_view key);

// Logs a ShardCache::SaveGraphs of `domain`'s shards begun at `started` (nothing when there were
// none): how many, how long, and the first failure.
void LogGraphsSaved(ShardDomain domain, size_t saved, size_t failed, const Status& first_error,
                    std::chrono::steady_clock::time_point started);

}  // namespace engram
