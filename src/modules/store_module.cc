#include "modules/store_module.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <array>
#include <filesystem>
#include <iterator>
#include <string_view>

#include "api/metrics.h"
#include "modules/startup.h"
#include "store/pg_store.h"
#include "store/sqlite_data_dir.h"
#include "store/sqlite_store.h"

namespace engram {

namespace {

// One unlabelled Prometheus histogram from cumulative per-bucket counts.
template <size_t N>
void AppendHistogram(std::string& out, std::string_view name, std::string_view help,
                     const std::array<double, N>& bounds, const std::array<uint64_t, N>& le,
                     uint64_t count, double sum) {
  out += fmt::format("# HELP {} {}\n# TYPE {} histogram\n", name, help, name);
  for (size_t i = 0; i < N; ++i) {
    out += fmt::format("{}_bucket{{le=\"{}\"}} {}\n", name, bounds[i], le[i]);
  }
  out += fmt::format("{}_bucket{{le=\"+Inf\"}} {}\n", name, count);
  out += fmt::format("{}_sum {:.6f}\n", name, sum);
  out += fmt::format("{}_count {}\n", name, count);
}

// The group commit's figures (SQLite): how many writes share a commit and how long commits take,
// which is most of an add's acknowledgement.
void AppendWritePathMetrics(const Store::Stats& s, std::string& out) {
  AppendMetric(out, "counter", "engram_store_commits_total",
               "Transactions committed by the store's writer.", s.commits);
  AppendMetric(out, "counter", "engram_store_writes_total",
               "Writes carried by those commits (group commit).", s.writes);
  AppendHistogram(out, "engram_store_commit_duration_seconds",
                  "One group transaction, BEGIN to synced COMMIT.", s.kCommitBuckets, s.commit_le,
                  s.commits, s.commit_seconds);
  AppendLabelledMetric(out, "counter", "engram_store_checkpoints_total",
                       "WAL checkpoints, by the background thread or inside a commit.", "by",
                       {{"background", static_cast<double>(s.checkpoints_background)},
                        {"commit", static_cast<double>(s.checkpoints_in_commit)}});
  if (!s.intake) return;
  // The intake journal: an add's acknowledgement waits for one of its syncs.
  const auto& j = *s.intake;
  AppendMetric(out, "counter", "engram_intake_records_total",
               "Memory events made durable by the intake journal.", j.records);
  AppendMetric(out, "counter", "engram_intake_refused_total",
               "Memory events refused because the journal could not write (out of disk space, or "
               "failed).",
               j.refused);
  AppendHistogram(out, "engram_intake_sync_duration_seconds",
                  "One group of journal records, write to synced.", j.kSyncBuckets, j.sync_le,
                  j.syncs, j.sync_seconds);
  AppendMetric(out, "gauge", "engram_intake_files",
               "Intake journal files on disk (the current one and any holding events not yet "
               "ended).",
               j.live_files);
}

}  // namespace

Result<std::unique_ptr<Store>> OpenStore(const ServeOptions& options) {
  std::error_code ec;
  std::filesystem::create_directories(options.data_dir, ec);
  if (ec) {
    return StartFailure(
        fmt::format("cannot create data directory {}: {}", options.data_dir, ec.message()));
  }
  if (!options.store_url.empty()) {
    auto pg = PgStore::Open({.url = options.store_url,
                             .connections = options.store_connections,
                             .node_id = options.node_id,
                             .lease = std::chrono::milliseconds(options.job_lease_ms)});
    if (!pg.ok()) return StartFailure("cannot open store: " + pg.status().ToString());
    // The URL may carry a password: it is not logged.
    spdlog::info("store opened: PostgreSQL (schema v{}), node {}", (*pg)->schema_version(),
                 (*pg)->node_id());
    return std::unique_ptr<Store>(std::move(pg).value());
  }
  auto sqlite = SqliteStore::Open(sqlite_data_dir::WritableOptions(options.data_dir));
  if (!sqlite.ok()) return StartFailure("cannot open store: " + sqlite.status().ToString());
  spdlog::info("store opened: {} (schema v{})", options.data_dir, (*sqlite)->schema_version());
  return std::unique_ptr<Store>(std::move(sqlite).value());
}

void AppendStoreMetrics(const Store::Stats& stats, std::string& out) {
  AppendMetric(out, "gauge", "engram_store_memories", "Memories in the store.",
               static_cast<uint64_t>(stats.memories));
  AppendMetric(out, "gauge", "engram_store_bytes", "Size of the store on disk.",
               static_cast<uint64_t>(stats.bytes_on_disk));
  if (stats.group_commit) AppendWritePathMetrics(stats, out);
}

}  // namespace engram
