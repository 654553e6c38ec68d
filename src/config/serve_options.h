// ServeOptions: everything `engram serve` can be told, with its defaults. Filled from command-line
// flags, a config file (--config, TOML or INI) and ENGRAM_* environment variables (see
// cli/serve_command.cc); validated by Validate().
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/status.h"

namespace engram {

struct ServeOptions {
  // The process (config/settings/server.cc).
  std::string listen = "127.0.0.1:8080";     // HOST:PORT; port 0 picks a free port
  std::string data_dir = "data";             // SQLite database and other state
  std::vector<std::string> api_keys;         // "KEY" or "KEY:ws1:ws2"; none = development mode
  std::vector<std::string> allowed_origins;  // browser origins that may call the server (CORS)
  std::vector<std::string> allowed_hosts;    // Host names a development-mode server answers
  // A PostgreSQL URL (postgresql://user:password@host:port/db) makes PostgreSQL the store, shared
  // by every node given the same URL; empty: SQLite in data_dir.
  std::string store_url;
  std::string log_level = "info";

  // The HTTP transport (config/settings/transport.cc).
  int io_threads = 0;       // 0: one per core (at least 2); they also run searches (compute_slots)
  int worker_threads = 16;  // handlers block on fsync; more workers let group commit batch more
  // Searches run on the I/O threads, this many at once (0: one per core), when the store and the
  // model are local (HttpServerOptions::is_compute_bound).
  int compute_slots = 0;
  uint64_t max_body_bytes = 64ull << 20;
  uint64_t max_header_bytes = 16 << 10;
  int64_t header_timeout_ms = 10000;
  int64_t body_timeout_ms = 60000;
  int64_t idle_timeout_ms = 30000;
  // Connection and buffering limits of the transport (HttpServerOptions).
  uint64_t max_connections = 1024;
  uint64_t max_connections_per_client = 256;  // 0: no per-address limit
  int64_t pressure_idle_timeout_ms = 1000;  // idle wait once over half of max_connections are open
  uint64_t max_inflight_body_bytes = 256ull << 20;
  int64_t shutdown_grace_ms = 10000;

  // The text embedder (config/settings/embedding.cc).
  // Embeddings: "builtin" (Universal Sentence Encoder lite from model_dir), "openai" (an
  // OpenAI-compatible /v1/embeddings endpoint) or "none" (BM25 only).
  std::string embedder = "builtin";
  // Built-in model arithmetic: "fp32" (matches the reference runtime to 1e-5), "bf16"
  // (bfloat16 products on CPUs with AVX512_BF16) or "int8" (8-bit products: AVX512_VNNI,
  // AVX-VNNI, AVX2, or plain C++; the same vectors on each): faster, vectors differ slightly.
  // "auto": int8 where it is faster than fp32 (AVX512_VNNI, AVX-VNNI, AVX2 without AVX-512),
  // else fp32.
  std::string embed_precision = "auto";
  // Kernel family: "auto" (the widest this CPU runs), or "scalar", "avx2", "avxvnni", "avx512",
  // "neon" to force one, for tests and comparisons; a family the CPU lacks stops the start.
  std::string kernels = "auto";
  std::string model_dir;  // empty: <binary dir>/../third_party/model/package/dist
  std::string embed_url;  // e.g. http://127.0.0.1:8000/v1
  std::string embed_model;
  std::string embed_api_key;
  int embed_dimensions = 0;  // 0: learned from the endpoint at start
  int64_t embed_timeout_ms = 10000;
  int embed_retries = 2;
  // Recent search queries whose vectors are kept (LRU, ~2 KiB each at 512 dimensions); a repeated
  // query skips the model. 0: off.
  int query_cache_entries = 1024;

  // The chat endpoint of the LLM extractors and reranker (config/settings/llm.cc).
  std::string llm_url;  // e.g. http://127.0.0.1:8000/v1
  std::string llm_model;
  std::string llm_api_key;
  int64_t llm_timeout_ms = 60000;
  int llm_retries = 2;

  // Retrieval, shared by every search (config/settings/retrieval.cc).
  double bm25_k1 = 1.2;
  double bm25_b = 0.75;
  // Retrieval: "hybrid", "bm25" or "vector"; fusion "score" or "rrf".
  std::string retrieval = "hybrid";
  std::string fusion = "zscore";
  double vector_weight = 0.5;
  double identifier_vector_weight = 0.1;
  int neighbours = 1;
  std::string neighbour_placement = "scored";  // "scored" (ranked by inherited score) or "after"
  double neighbour_weight = 0.9;
  double question_factor = 0.9;   // own-score factor of short turns that ask (end with "?")
  double reply_weight = 1.0;      // share of a short asking turn's score its reply inherits
  double window_share = 0.5;      // BM25 over conversation windows; 0 = each turn alone
  double relevance_floor = 0.30;  // Leaderboard: cosine a turn without a query term needs
  double time_weight = 0.8;       // boost of turns near dates the query names; 0 = off
  uint64_t hnsw_threshold = 20000;
  bool hnsw_graph_files = true;  // keep scopes' HNSW graphs in data_dir/graphs between loads
  // Leaderboard and V4 memory search reranking: "none" or "llm" (the --llm-* endpoint reorders
  // the best rerank_candidates results; on any failure the search answers in its own order).
  std::string rerank = "none";
  int rerank_candidates = 30;
  int64_t rerank_timeout_ms = 10000;
  uint64_t shard_memory_mb = 0;  // all domains' shards kept in RAM at most; 0: no limit

  // The Leaderboard API (config/settings/leaderboard.cc).
  std::string leaderboard_workspace = "leaderboard";
  // Request content limits (docs/api/README.md "Common"); each 4xx names the limit it hit.
  uint64_t max_image_bytes = 10ull << 20;          // per decoded image
  uint64_t max_request_image_bytes = 30ull << 20;  // decoded images per request
  double leaderboard_retention_days = 0;           // users idle longer are deleted; 0: never
  double leaderboard_idempotency_ttl_days = 7;     // request_id records kept this long; 0: forever
  // What a search result shows: "turns" (the matched turn) or "excerpts" (it with the turns of
  // its session around it; RetrievalOptions::excerpts).
  std::string leaderboard_results = "excerpts";
  int excerpt_turns_before = 5;
  int excerpt_turns_after = 5;
  uint64_t excerpt_max_bytes = 8192;     // context stops where a result would exceed this
  uint64_t answer_max_bytes = 96 << 10;  // and where the answer's results would exceed this
  int excerpt_lead_results = 30;         // results that show their matched turn alone, first

  // V4 memories and the mem0-compatible API (config/settings/memories.cc).
  // Memory extraction: "rules" (built-in, offline) or "llm" (an OpenAI-compatible
  // chat-completions endpoint).
  std::string extractor = "rules";
  int event_workers = 2;                   // threads running memory events (extraction)
  int max_top_k = 1000;                    // memory and knowledge-base search
  uint64_t max_metadata_bytes = 64 << 10;  // a memory's metadata, as JSON
  // The mem0-compatible API (docs/mem0.md).
  std::string mem0_workspace = "default";  // workspace of requests naming no project

  // Knowledge bases (config/settings/knowledge.cc).
  std::string import_dir;  // LOCAL documents are read only below it; empty: none can be
  // "per-workspace" (each reads import_dir/<workspace>), "shared", or "auto": per-workspace when an
  // API key is limited to some workspaces (a shared directory would cross that limit).
  std::string import_dir_layout = "auto";
  bool remote_fetch = false;  // allow http(s):// document URLs (public addresses only)
  bool remote_fetch_allow_private = false;  // tests only: remote fetches may reach loopback etc.
  std::string oss_endpoint;  // S3-compatible endpoint for oss://bucket/key; empty: OSS disabled
  std::string oss_region = "us-east-1";
  std::string oss_access_key;
  std::string oss_secret_key;
  uint64_t kb_max_doc_bytes = 64ull << 20;  // largest document fetched
  int kb_chunk_size = 1200;                 // bytes of text per chunk at most
  int kb_chunk_overlap = 150;               // bytes repeated between consecutive chunks
  int kb_workers = 1;                       // document ingestion threads
  int64_t kb_pdf_timeout_ms = 30000;        // pdftotext is killed after this long

  // Skills (config/settings/skills.cc). Limits of an imported skill ZIP (decompressed bytes are
  // counted as read).
  uint64_t skill_max_files = 256;
  uint64_t skill_max_bytes = 32ull << 20;
  int skill_workers = 1;  // threads running skill extraction tasks

  // The MCP endpoint (config/settings/mcp.cc): Streamable HTTP session quotas and batch size.
  uint64_t mcp_max_sessions = 10000;        // live sessions of all clients
  uint64_t mcp_sessions_per_key = 1000;     // beyond: the key's least recently used one ends
  uint64_t mcp_sessions_per_client = 1000;  // beyond: the address's least recently used one ends
  uint64_t mcp_max_batch = 64;              // messages in one JSON-RPC batch (2025-03-26)

  // OCR of Leaderboard images (config/settings/ocr.cc).
  bool ocr = true;                // read the text of images so searches find it
  int64_t ocr_timeout_ms = 5000;  // per image

  // Several nodes on one PostgreSQL store (config/settings/nodes.cc).
  int store_connections = 16;    // connections this node keeps to PostgreSQL
  std::string node_id;           // this node's name in job leases; empty: a new random id
  int64_t job_lease_ms = 30000;  // jobs of a node that stopped renewing are taken over after this
  int64_t job_poll_ms = 2000;    // how often a node looks for such jobs

  // Parsed from `listen`.
  std::string host;
  uint16_t port = 0;

  // Checks values and fills host/port. Refuses a non-loopback address without API keys.
  Status Validate();
};

bool IsLoopbackHost(const std::string& host);

}  // namespace engram
