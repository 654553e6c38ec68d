#include "core/graph_sweep.h"

#include <spdlog/spdlog.h>

#include <chrono>
#include <filesystem>
#include <set>
#include <system_error>
#include <utility>

#include "core/shard_graphs.h"
#include "core/shard_keys.h"
#include "index/hnsw_graph.h"

namespace engram {

namespace {

namespace fs = std::filesystem;

// The graph file a directory entry belongs to ("x.hnsw" for x.hnsw, x.hnsw.meta, x.hnsw.tmp and
// x.hnsw.meta.tmp), or "" for a name no graph save writes.
std::string GraphOf(const std::string& name) {
  std::string base = name;
  for (const char* suffix : {".tmp", ".meta"}) {
    const std::string s = suffix;
    if (base.size() > s.size() && base.compare(base.size() - s.size(), s.size(), s) == 0) {
      base.resize(base.size() - s.size());
    }
  }
  const std::string graph = ".hnsw";
  if (base.size() <= graph.size() ||
      base.compare(base.size() - graph.size(), graph.size(), graph) != 0) {
    return "";
  }
  return base;
}

// The graphs (full paths) the regular files of `dir` belong to. Never throws: a directory that
// cannot be read, or stops being readable, ends the walk.
std::set<std::string> GraphsOnDisk(const std::string& dir) {
  std::set<std::string> graphs;
  std::error_code ec;
  fs::directory_iterator it(dir, ec), end;
  for (; !ec && it != end; it.increment(ec)) {
    std::error_code type_ec;
    // symlink_status: a link is not followed, so a sweep never overwrites a file elsewhere.
    if (!fs::is_regular_file(it->symlink_status(type_ec)) || type_ec) continue;
    const std::string graph = GraphOf(it->path().filename().string());
    if (!graph.empty()) graphs.insert(dir + "/" + graph);
  }
  return graphs;
}

// Removes the graphs of `on_disk` (full paths) that belong to no scope of `scopes`.
GraphSweepResult RemoveUnlisted(const std::string& dir, std::set<std::string> on_disk,
                                const StoredScopes& scopes) {
  GraphSweepResult result;
  // Each stored scope's name struck off the graphs on disk (few); what is left goes.
  auto keep = [&](const std::string& path) { result.kept += on_disk.erase(path); };
  for (const auto& [workspace, user_id] : scopes.leaderboard_users) {
    keep(ShardGraphPath(dir, ShardDomain::kLeaderboard, LeaderboardShardKey(workspace, user_id)));
  }
  for (const std::string& workspace : scopes.memory_workspaces) {
    keep(ShardGraphPath(dir, ShardDomain::kMemories, MemoryShardKey(workspace)));
  }
  for (const auto& [workspace, kb_id] : scopes.knowledge_bases) {
    keep(ShardGraphPath(dir, ShardDomain::kKb, KbShardKey(workspace, kb_id)));
  }
  for (const std::string& path : on_disk) HnswGraph::RemoveSaved(path);
  result.removed = on_disk.size();
  return result;
}

}  // namespace

GraphSweepResult SweepGraphFiles(const std::string& dir, const StoredScopes& scopes) {
  if (dir.empty()) return {};
  return RemoveUnlisted(dir, GraphsOnDisk(dir), scopes);
}

GraphSweepResult SweepGraphDir(const std::string& dir, TransferStore* store) {
  if (dir.empty()) return {};
  std::set<std::string> on_disk = GraphsOnDisk(dir);
  if (on_disk.empty()) return {};
  const auto started = std::chrono::steady_clock::now();
  Result<StoredScopes> scopes = store->ListStoredScopes();
  if (!scopes.ok()) {
    spdlog::warn("saved vector graphs not swept: the stored scopes cannot be listed: {}",
                 scopes.status().ToString());
    return {};
  }
  const GraphSweepResult swept = RemoveUnlisted(dir, std::move(on_disk), *scopes);
  spdlog::info(
      "saved vector graphs swept: {} kept, {} of scopes no longer stored removed, {:.2f} s",
      swept.kept, swept.removed,
      std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count());
  return swept;
}

}  // namespace engram
