// StoreStats: a store's own figures for /metrics (Store::GetStats), and IntakeStats, those of
// SQLite's intake journal. Plain value types, so that readers of the figures need no backend
// header.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>

namespace engram {

// The intake journal's figures (IntakeJournal::GetStats).
struct IntakeStats {
  static constexpr std::array<double, 8> kSyncBuckets = {0.0005, 0.001, 0.002, 0.005,
                                                         0.01,   0.05,  0.25,  1};
  uint64_t records = 0;                                 // appended and synced
  uint64_t syncs = 0;                                   // write + fdatasync groups
  double sync_seconds = 0;                              // time spent in them
  std::array<uint64_t, kSyncBuckets.size()> sync_le{};  // cumulative counts per bucket
  size_t live_files = 0;                                // files not yet deleted (this run's)
  uint64_t refused = 0;  // records refused since the journal could not write (out of space…)
};

// Stores' own figures for /metrics.
struct StoreStats {
  int64_t memories = 0;
  int64_t bytes_on_disk = 0;
  // The write path, where the backend has one of its own (SQLite's group commit; elsewhere
  // group_commit is false and the figures below are not exported).
  bool group_commit = false;
  static constexpr std::array<double, 8> kCommitBuckets = {0.0005, 0.001, 0.002, 0.005,
                                                           0.01,   0.05,  0.25,  1};
  uint64_t commits = 0;                                     // transactions committed
  uint64_t writes = 0;                                      // writes they carried (group commit)
  double commit_seconds = 0;                                // BEGIN to end of COMMIT, summed
  std::array<uint64_t, kCommitBuckets.size()> commit_le{};  // cumulative counts per bucket
  uint64_t checkpoints_background = 0;
  uint64_t checkpoints_in_commit = 0;
  // SQLite's intake journal (accepted memory events), when it has one.
  std::optional<IntakeStats> intake;
};

}  // namespace engram
