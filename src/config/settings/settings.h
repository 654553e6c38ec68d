// Every `engram serve` setting, declared by the feature it configures: one function per feature,
// each in its own file under config/settings/. ServeOptionTable() (config/option_table.h) joins
// them in the order of this header, which is the order of the help and the docs.
// Thread-safety: each returns a new list.
#pragma once

#include <vector>

#include "config/option_table.h"

namespace engram {

// The process: where it listens, where its data and keys are, which store it uses, how much it
// logs.
std::vector<OptionSpec> ServerSettings();
// The HTTP transport: threads, request size limits, timeouts, connection limits.
std::vector<OptionSpec> TransportSettings();
// The text embedder: the built-in model (its arithmetic and kernels), an OpenAI-compatible
// endpoint, or none; the query vector cache.
std::vector<OptionSpec> EmbeddingSettings();
// The OpenAI-compatible chat endpoint the LLM extractors and the reranker use.
std::vector<OptionSpec> LlmSettings();
// What every search shares: BM25, fusion, the conversation steps, the vector index, the reranker,
// the one shard memory budget.
std::vector<OptionSpec> RetrievalSettings();
// The Leaderboard API: its workspace, image limits and data lifecycle.
std::vector<OptionSpec> LeaderboardSettings();
// V4 memories and the mem0-compatible API: extraction, event workers, search and metadata limits.
std::vector<OptionSpec> MemorySettings();
// Knowledge bases: where documents may come from, how they are chunked, ingestion threads.
std::vector<OptionSpec> KnowledgeSettings();
// Skills: the limits of an imported skill ZIP, extraction threads.
std::vector<OptionSpec> SkillSettings();
// The MCP endpoint: session quotas and batch size.
std::vector<OptionSpec> McpSettings();
// OCR of the images sent with Leaderboard adds.
std::vector<OptionSpec> OcrSettings();
// Several nodes on one PostgreSQL store: connections, the node's name, job leases.
std::vector<OptionSpec> SeveralNodesSettings();

}  // namespace engram
