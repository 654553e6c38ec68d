// The store module: opens the system of record the options name (SQLite in the data directory, or
// PostgreSQL shared with other nodes) and renders the store's own /metrics figures.
// Thread-safety: OpenStore is for the start; AppendStoreMetrics may run on any thread.
#pragma once

#include <memory>
#include <string>

#include "config/serve_options.h"
#include "store/store.h"

namespace engram {

// SQLite in options.data_dir, or PostgreSQL when options.store_url is set. A failure is a
// StartFailure (exit 1). The caller owns the store.
Result<std::unique_ptr<Store>> OpenStore(const ServeOptions& options);

// engram_store_memories, engram_store_bytes and, where the store has a group commit of its own
// (SQLite), the write path's commits, checkpoints and intake journal.
void AppendStoreMetrics(const Store::Stats& stats, std::string& out);

}  // namespace engram
