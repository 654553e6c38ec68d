#include "modules/retrieval_module.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <filesystem>
#include <system_error>
#include <utility>
#include <vector>

#include "api/metrics.h"
#include "core/graph_sweep.h"
#include "core/rerank_stage.h"
#include "core/vector_backfill.h"
#include "embed/embedder.h"
#include "extract/llm_reranker.h"
#include "index/hnsw_graph.h"
#include "modules/llm_endpoint.h"
#include "modules/startup.h"
#include "store/memory_vectors.h"

namespace engram {

namespace {

// Removes `dir` and the graphs in it (each overwritten first, as HnswGraph::RemoveSaved does).
void RemoveGraphFiles(const std::string& dir) {
  std::error_code ec;
  if (!std::filesystem::exists(dir, ec)) return;
  for (const auto& entry : std::filesystem::directory_iterator(dir, ec)) {
    if (entry.path().extension() == ".hnsw") HnswGraph::RemoveSaved(entry.path().string());
  }
  std::filesystem::remove_all(dir, ec);
}

RetrievalOptions RetrievalFromFlags(const ServeOptions& options) {
  RetrievalOptions r;
  ParseRetrievalMode(options.retrieval, &r.mode);
  r.fusion.method = options.fusion == "rrf"      ? FusionMethod::kRrf
                    : options.fusion == "zscore" ? FusionMethod::kZScore
                                                 : FusionMethod::kScoreSum;
  r.fusion.vector_weight = static_cast<float>(options.vector_weight);
  r.identifier_vector_weight = static_cast<float>(options.identifier_vector_weight);
  r.neighbours = options.neighbours;
  r.neighbour_score_factor = static_cast<float>(options.neighbour_weight);
  r.question_factor = static_cast<float>(options.question_factor);
  r.reply_score_factor = static_cast<float>(options.reply_weight);
  r.window_share = static_cast<float>(options.window_share);
  r.relevance_floor = static_cast<float>(options.relevance_floor);
  r.time_weight = static_cast<float>(options.time_weight);
  r.neighbour_placement = options.neighbour_placement == "scored"
                              ? RetrievalOptions::NeighbourPlacement::kByScore
                              : RetrievalOptions::NeighbourPlacement::kAfterHit;
  return r;
}

Result<std::unique_ptr<Reranker>> LlmRerankerFromFlags(const ServeOptions& options) {
  LlmRerankerOptions rr;
  rr.chat = LlmChatOptions(options);
  // A search waits for it: one bounded attempt, no retries; a short answer suffices.
  rr.chat.request_timeout = std::chrono::milliseconds(options.rerank_timeout_ms);
  rr.chat.connect_timeout =
      std::chrono::milliseconds(std::min<int64_t>(2000, options.rerank_timeout_ms));
  rr.chat.max_retries = 0;
  rr.chat.max_tokens = 1024;
  auto created = LlmReranker::Create(std::move(rr));
  if (!created.ok()) {
    return ConfigurationError("cannot use the LLM reranker: " + created.status().ToString());
  }
  spdlog::info("search reranking (leaderboard, memories): LLM, best {} results, {} ms budget",
               options.rerank_candidates, options.rerank_timeout_ms);
  return std::unique_ptr<Reranker>(std::move(*created));
}

}  // namespace

RetrievalModule::RetrievalModule(size_t budget_bytes) : budget_({.limit_bytes = budget_bytes}) {}

RetrievalModule::~RetrievalModule() = default;

Result<std::unique_ptr<RetrievalModule>> RetrievalModule::Build(const ServeOptions& options,
                                                                RetrievalModuleDeps deps) {
  std::unique_ptr<RetrievalModule> m(new RetrievalModule(options.shard_memory_mb << 20));
  m->index_.bm25 = {.k1 = static_cast<float>(options.bm25_k1),
                    .b = static_cast<float>(options.bm25_b)};
  if (deps.search_embedder != nullptr) {
    m->index_.vector_model = deps.search_embedder->model_id();
    m->index_.vectors = {.dim = deps.search_embedder->dimension(),
                         .hnsw_threshold = options.hnsw_threshold};
    // The background queue batches on its own (several adds per pass) and may hold the model for
    // seconds on a long text: it uses the (metered) model directly, not the batching lanes, so
    // query embeddings never queue behind it and its own workers keep running side by side.
    m->backfill_ = std::make_unique<VectorBackfill>(deps.vectors, deps.background_embedder);
  }
  // A cache of the scopes' graphs, beside the store (see docs/operations.md). A directory that
  // cannot be made costs only rebuilt graphs, never the start; when graphs are not kept, files
  // an earlier run left are removed, so none outlives the data it was built from.
  const std::string graph_dir = options.data_dir + "/graphs";
  if (deps.search_embedder == nullptr || !options.hnsw_graph_files || options.hnsw_threshold == 0) {
    RemoveGraphFiles(graph_dir);
  } else {
    std::error_code ec;
    std::filesystem::create_directories(graph_dir, ec);
    if (ec) {
      spdlog::warn("vector graphs will not be kept: cannot create {}: {}", graph_dir, ec.message());
    } else {
      m->graph_dir_ = graph_dir;
      // Before any shard exists: nothing saves or loads a graph beside the sweep.
      if (deps.scopes != nullptr) SweepGraphDir(graph_dir, deps.scopes);
    }
  }
  m->retrieval_ = RetrievalFromFlags(options);
  m->rerank_candidates_ = static_cast<size_t>(options.rerank_candidates);
  if (options.rerank == "llm") {
    auto reranker = LlmRerankerFromFlags(options);
    if (!reranker.ok()) return reranker.status();
    m->reranker_ = std::move(*reranker);
  }
  return m;
}

bool RetrievalModule::Shutdown(std::chrono::milliseconds grace) {
  return backfill_ == nullptr || backfill_->Shutdown(grace);
}

void RetrievalModule::AppendMetrics(std::string& out) const {
  AppendMetric(out, "gauge", "engram_vector_queue", "Memories waiting for a vector.",
               backfill_ ? backfill_->pending() : 0);
  const auto usage = budget_.Usage();
  auto per_domain = [&](std::string_view type, std::string_view name, std::string_view help,
                        auto value) {
    std::vector<std::pair<std::string_view, double>> samples;
    for (size_t d = 0; d < kShardDomainCount; ++d) {
      samples.emplace_back(ShardDomainName(static_cast<ShardDomain>(d)),
                           static_cast<double>(value(usage[d])));
    }
    AppendLabelledMetric(out, type, name, help, "domain", samples);
  };
  per_domain("gauge", "engram_shards_loaded", "Shards held in memory, by domain.",
             [](const ShardDomainUsage& u) { return u.shards; });
  per_domain("gauge", "engram_shard_bytes", "Approximate memory held by loaded shards, by domain.",
             [](const ShardDomainUsage& u) { return u.bytes; });
  per_domain("counter", "engram_shard_evictions_total",
             "Idle shards dropped to stay within --shard-memory-mb, by domain.",
             [](const ShardDomainUsage& u) { return u.evictions; });
  per_domain("counter", "engram_graph_save_failures_total",
             "Dropped shards whose vector graph could not be saved (rebuilt at the next load), "
             "by domain.",
             [](const ShardDomainUsage& u) { return u.graph_save_failures; });
  AppendMetric(out, "gauge", "engram_shard_budget_bytes",
               "The --shard-memory-mb budget over all domains' shards (0: no limit).",
               budget_.limit_bytes());
}

void AppendRerankMetrics(const RerankStage& leaderboard, const RerankStage& memory,
                         std::string& out) {
  AppendLabelledMetric(out, "counter", "engram_reranks_total", "Searches sent to the reranker.",
                       "api",
                       {{"leaderboard", static_cast<double>(leaderboard.calls())},
                        {"memory", static_cast<double>(memory.calls())}});
  AppendLabelledMetric(out, "counter", "engram_rerank_failures_total",
                       "Reranks that failed (the search kept its own order).", "api",
                       {{"leaderboard", static_cast<double>(leaderboard.failures())},
                        {"memory", static_cast<double>(memory.failures())}});
}

}  // namespace engram
