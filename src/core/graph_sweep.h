// The sweep of a server's graph directory at start: removes the saved vector graphs of scopes the
// store no longer holds. A Leaderboard user deleted through this server takes its graph file with
// it (ShardRegistry::Drop), and a loaded V4 workspace or knowledge base zeroes what it removes;
// but on a shared store a user, workspace or knowledge base can be deleted through another node,
// and the graph this node saved for it would keep that scope's vector codes on this node's disk
// until the scope was loaded here again, which for a deleted scope is never. The sweep runs before
// any shard exists, so no save or load of a graph runs beside it.
#pragma once

#include <cstddef>
#include <string>

#include "store/transfer_store.h"

namespace engram {

struct GraphSweepResult {
  size_t kept = 0;     // graphs of scopes the store holds
  size_t removed = 0;  // graphs of other scopes, each with its record and temporary files
};

// Removes every graph in `dir` (a regular file named "*.hnsw", with its ".meta" record and ".tmp"
// leftovers) that is not the graph of a Leaderboard user, V4 memory workspace or knowledge base in
// `scopes`; each file is overwritten before it is unlinked (HnswGraph::RemoveSaved). Other names,
// directories and symbolic links are left alone.
// Thread-safety: a function over the directory; the caller makes sure that no shard saves or loads
// a graph in `dir` meanwhile.
GraphSweepResult SweepGraphFiles(const std::string& dir, const StoredScopes& scopes);

// Lists `store`'s scopes and sweeps `dir` with them (SweepGraphFiles), logging the counts and the
// time (no scope is named). A directory without graph files costs no listing; a listing that fails
// keeps every file and is logged. Thread-safety: as SweepGraphFiles.
GraphSweepResult SweepGraphDir(const std::string& dir, TransferStore* store);

}  // namespace engram
