// The shard cache key of each domain that keeps vector graphs: what its ShardCache holds a shard
// under and what names the shard's graph file (ShardGraphPath hashes it). Written once here, so
// the caches and the sweep of graph files (graph_sweep.h) cannot disagree.
//
// Thread-safety: pure functions.
#pragma once

#include <string>

namespace engram {

// A Leaderboard user's shard. Workspace names hold no unit separator, so the key is unambiguous.
inline std::string LeaderboardShardKey(const std::string& workspace, const std::string& user_id) {
  return workspace + '\x1f' + user_id;
}

// A workspace's V4 memory shard: the workspace itself.
inline std::string MemoryShardKey(const std::string& workspace) { return workspace; }

// A knowledge base's shard.
inline std::string KbShardKey(const std::string& workspace, const std::string& kb_id) {
  return workspace + '\x1f' + kb_id;
}

}  // namespace engram
