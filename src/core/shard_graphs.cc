#include "core/shard_graphs.h"

#include <spdlog/spdlog.h>

#include <cstdint>
#include <cstdio>

namespace engram {

std::string ShardGraphPath(const std::string& dir, ShardDomain domain, std::string_view key) {
  if (dir.empty()) return {};
  // FNV-1a, 64 bits: stable across builds and platforms, as a file name must be.
  uint64_t h = 1469598103934665603ull;
  for (const char c : key) h = (h ^ static_cast<unsigned char>(c)) * 1099511628211ull;
  char hex[17];
  std::snprintf(hex, sizeof(hex), "%016llx", static_cast<unsigned long long>(h));
  return dir + "/" + std::string(ShardDomainName(domain)) + "-" + hex + ".hnsw";
}

void SetShardGraph(VectorIndexOptions* vectors, const std::string& dir, ShardDomain domain,
                   std::string_view key) {
  vectors->graph_file = ShardGraphPath(dir, domain, key);
  vectors->on_graph_built = [domain](const GraphBuilt& built) {
    spdlog::info(
        "vector graph of a {} shard answers: {} vectors, {} taken from its saved graph, {:.1f} s",
        ShardDomainName(domain), built.vectors, built.adopted, built.seconds);
  };
}

void LogGraphsSaved(ShardDomain domain, size_t saved, size_t failed, const Status& first_error,
                    std::chrono::steady_clock::time_point started) {
  if (saved + failed == 0) return;
  const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                      std::chrono::steady_clock::now() - started)
                      .count();
  spdlog::info("vector graphs of {} loaded {} shards saved or unchanged in {} ms", saved,
               ShardDomainName(domain), ms);
  if (failed > 0) {
    spdlog::warn("vector graphs of {} {} shards not saved (they are rebuilt at the next load): {}",
                 failed, ShardDomainName(domain), first_error.ToString());
  }
}

}  // namespace engram
