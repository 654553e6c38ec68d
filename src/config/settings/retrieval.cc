// What every search shares: BM25, fusion, the conversation steps, the vector index, the reranker,
// the one shard memory budget.
#include "config/settings/settings.h"

namespace engram {

std::vector<OptionSpec> RetrievalSettings() {
  // clang-format off
  return {
      {.name = "bm25-k1", .field = &ServeOptions::bm25_k1, .help = "BM25 term-frequency saturation", .tier = OptionTier::kAdvanced, .min = 0, .max = 10},
      {.name = "bm25-b", .field = &ServeOptions::bm25_b, .help = "BM25 length normalisation", .tier = OptionTier::kAdvanced, .min = 0, .max = 1},
      {.name = "retrieval", .field = &ServeOptions::retrieval, .help = "retrieval: hybrid, or one side alone (for baselines)", .tier = OptionTier::kAdvanced, .choices = {"hybrid", "bm25", "vector"}},
      {.name = "fusion", .field = &ServeOptions::fusion, .help = "fusion of BM25 and vector scores: zscore (standardised sum), score (min-max sum) or rrf", .tier = OptionTier::kAdvanced, .choices = {"zscore", "score", "rrf"}},
      {.name = "vector-weight", .field = &ServeOptions::vector_weight, .help = "weight of the vector side in fusion", .tier = OptionTier::kAdvanced, .min = 0, .max = 1},
      {.name = "identifier-vector-weight", .field = &ServeOptions::identifier_vector_weight, .help = "weight of the vector side in fusion for a query that names a code identifier (snake_case, a::b, camelCase with two humps)", .tier = OptionTier::kAdvanced, .min = 0, .max = 1},
      {.name = "neighbours", .field = &ServeOptions::neighbours, .help = "turns before and after each hit added to results (Leaderboard turns; V4 verbatim memories of one session)", .tier = OptionTier::kAdvanced, .min = 0, .max = 5},
      {.name = "neighbour-placement", .field = &ServeOptions::neighbour_placement, .help = "neighbours ranked by inherited score (scored) or right after their hit (after)", .tier = OptionTier::kAdvanced, .choices = {"scored", "after"}},
      {.name = "neighbour-weight", .field = &ServeOptions::neighbour_weight, .help = "fraction of a hit's score its neighbours inherit", .tier = OptionTier::kAdvanced, .min = 0, .max = 1},
      {.name = "question-factor", .field = &ServeOptions::question_factor, .help = "fraction of its score a short turn ending with a question mark keeps (1: off)", .tier = OptionTier::kAdvanced, .min = 0, .max = 1},
      {.name = "reply-weight", .field = &ServeOptions::reply_weight, .help = "fraction of a short asking turn's score its reply inherits", .tier = OptionTier::kAdvanced, .min = 0, .max = 1},
      {.name = "window-share", .field = &ServeOptions::window_share, .help = "share of a neighbouring turn's BM25 term scores a turn may use (0: each turn alone)", .tier = OptionTier::kAdvanced, .min = 0, .max = 1},
      {.name = "relevance-floor", .field = &ServeOptions::relevance_floor, .help = "Leaderboard: cosine with the query a turn sharing no query term needs to be returned (0: every candidate)", .tier = OptionTier::kAdvanced, .min = 0, .max = 1},
      {.name = "time-weight", .field = &ServeOptions::time_weight, .help = "boost of turns near the dates a query names, relative to the best score (0: off)", .tier = OptionTier::kAdvanced, .min = 0, .max = 5},
      {.name = "hnsw-threshold", .field = &ServeOptions::hnsw_threshold, .help = "vectors in a scope before an HNSW graph replaces the exact scan (0: never)", .tier = OptionTier::kAdvanced, .min = 0},
      {.name = "hnsw-graph-files", .field = &ServeOptions::hnsw_graph_files, .help = "keep the HNSW graphs of Leaderboard scopes, V4 memory workspaces and knowledge bases in the data directory (graphs/) when they leave memory or the server stops, so the next load takes a graph back instead of building it (--no-hnsw-graph-files: rebuilt at every load)", .tier = OptionTier::kAdvanced},
      {.name = "rerank", .field = &ServeOptions::rerank, .help = "reranking of Leaderboard and memory searches by the --llm-* endpoint (none: off)", .choices = {"none", "llm"}},
      {.name = "rerank-candidates", .field = &ServeOptions::rerank_candidates, .help = "best results of a search the reranker reorders", .tier = OptionTier::kAdvanced, .min = 2, .max = 100},
      {.name = "rerank-timeout-ms", .field = &ServeOptions::rerank_timeout_ms, .help = "time a rerank may take; past it the search keeps its own order", .tier = OptionTier::kAdvanced, .min = 100, .max = 600000},
      {.name = "shard-memory-mb", .field = &ServeOptions::shard_memory_mb, .help = "in-memory index shards of all domains (Leaderboard scopes, V4 memory workspaces, knowledge bases, skills) kept in RAM at most, least recently used idle ones dropped first and reloaded on use (0: no limit)", .min = 0},
  };
  // clang-format on
}

}  // namespace engram
