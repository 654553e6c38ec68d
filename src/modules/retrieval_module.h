// The retrieval module: what every domain's search shares. The analyzer, the index settings
// (BM25, vectors and the model whose vectors count), the retrieval steps from the retrieval flags
// (one set for the Leaderboard, V4 memory, knowledge-base and skill searches), the one shard
// memory budget (--shard-memory-mb) over the shard caches of every domain, the background vector
// queue and the optional LLM reranker.
//
// Ownership: the module owns all of them; it must outlive every shard cache and service built on
// it (it is built first and destroyed last). Thread-safety: the parts are safe for concurrent use;
// AppendMetrics may run on any thread; Shutdown is called once, from the thread that built it.
#pragma once

#include <chrono>
#include <memory>
#include <string>

#include "config/serve_options.h"
#include "core/retrieval_options.h"
#include "core/scope_shard.h"
#include "core/shard_budget.h"
#include "index/analyzer.h"

namespace engram {

class Embedder;
class RerankStage;
class Reranker;
class MemoryVectors;
class TransferStore;
class VectorBackfill;

struct RetrievalModuleDeps {
  MemoryVectors* vectors = nullptr;           // where the backfill stores vectors
  const Embedder* search_embedder = nullptr;  // null: BM25 only
  const Embedder* background_embedder = nullptr;
  // The scopes the store holds, for the sweep of graph files at start (graph_sweep.h); null: no
  // sweep.
  TransferStore* scopes = nullptr;
};

class RetrievalModule {
 public:
  static Result<std::unique_ptr<RetrievalModule>> Build(const ServeOptions& options,
                                                        RetrievalModuleDeps deps);
  ~RetrievalModule();

  const Analyzer* analyzer() const { return &analyzer_; }
  // BM25 and vector settings of every shard, with the model id of the vectors searched.
  const ShardOptions& index() const { return index_; }
  // Where shards keep their vector graphs between loads ("": not kept; --hnsw-graph-files).
  const std::string& graph_dir() const { return graph_dir_; }
  // Fusion and the conversation steps (neighbours, question factor, date prior).
  const RetrievalOptions& retrieval() const { return retrieval_; }
  ShardBudget* budget() { return &budget_; }
  // Null without an embedder.
  VectorBackfill* backfill() { return backfill_.get(); }
  // Null unless --rerank llm.
  const Reranker* reranker() const { return reranker_.get(); }
  size_t rerank_candidates() const { return rerank_candidates_; }

  // Drops vectors still being computed (the backfill redoes them at the next start) rather than
  // holding up shutdown behind a long text; false when a worker is still inside the model.
  bool Shutdown(std::chrono::milliseconds grace);

  // The shard budget by domain and the vector queue.
  void AppendMetrics(std::string& out) const;

 private:
  explicit RetrievalModule(size_t budget_bytes);

  Analyzer analyzer_;
  ShardOptions index_;
  std::string graph_dir_;
  RetrievalOptions retrieval_;
  size_t rerank_candidates_ = 0;
  ShardBudget budget_;  // outlives every cache (they are built after and destroyed before it)
  std::unique_ptr<VectorBackfill> backfill_;
  std::unique_ptr<Reranker> reranker_;
};

// engram_reranks_total and engram_rerank_failures_total, one sample per API that reranks.
void AppendRerankMetrics(const RerankStage& leaderboard, const RerankStage& memory,
                         std::string& out);

}  // namespace engram
