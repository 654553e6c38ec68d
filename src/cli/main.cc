// engram: the Engram memory server and its tools.
#include <CLI/CLI.hpp>
#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <cstdlib>
#include <iostream>
#include <sstream>

#include "cli/serve_command.h"
#include "common/build_info.h"
#include "config/serve_options.h"
#include "embed/embed_command.h"
#include "mcp/stdio_command.h"

namespace {

std::vector<std::string> SplitCommaList(const char* text) {
  std::vector<std::string> out;
  std::stringstream ss(text);
  std::string item;
  while (std::getline(ss, item, ',')) {
    if (!item.empty()) out.push_back(item);
  }
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  // Logs go to stderr; stdout carries only the "listening on" line and command output.
  spdlog::set_default_logger(spdlog::stderr_color_mt("engram"));

  CLI::App app{"Engram: a self-hosted memory server for AI agents"};
  app.require_subcommand(1);

  engram::ServeOptions serve;
  auto* serve_cmd = app.add_subcommand("serve", "run the HTTP server");
  // CLI11 reads config files only at the top level; `serve --config FILE` is rewritten to
  // `--config FILE serve` below. The file holds a [serve] section with the long flag names.
  app.set_config("--config", "", "read `serve` options from a TOML or INI file ([serve] section)");
  serve_cmd->add_option("--listen", serve.listen, "HOST:PORT to listen on (port 0: any free port)")
      ->envname("ENGRAM_LISTEN")->capture_default_str();
  serve_cmd->add_option("--data-dir", serve.data_dir, "directory for the database")
      ->envname("ENGRAM_DATA_DIR")->capture_default_str();
  serve_cmd->add_option("--api-key", serve.api_keys,
                        "API key, repeatable; KEY or KEY:ws1:ws2 to limit it to workspaces "
                        "(env ENGRAM_API_KEYS, comma-separated)");
  serve_cmd
      ->add_option("--io-threads", serve.io_threads,
                   "network I/O threads, which also run searches (0: one per core, at least 2)")
      ->envname("ENGRAM_IO_THREADS")->capture_default_str();
  serve_cmd->add_option("--worker-threads", serve.worker_threads, "request handler threads")
      ->envname("ENGRAM_WORKER_THREADS")->capture_default_str();
  serve_cmd
      ->add_option("--compute-slots", serve.compute_slots,
                   "searches run at once when store and model are local (0: one per core)")
      ->envname("ENGRAM_COMPUTE_SLOTS")->capture_default_str();
  serve_cmd->add_option("--max-body-bytes", serve.max_body_bytes, "request body limit")
      ->envname("ENGRAM_MAX_BODY_BYTES")->capture_default_str();
  serve_cmd->add_option("--max-header-bytes", serve.max_header_bytes, "request header limit")
      ->envname("ENGRAM_MAX_HEADER_BYTES")->capture_default_str();
  serve_cmd->add_option("--max-image-bytes", serve.max_image_bytes, "largest decoded image")
      ->envname("ENGRAM_MAX_IMAGE_BYTES")->capture_default_str();
  serve_cmd->add_option("--max-request-image-bytes", serve.max_request_image_bytes,
                        "decoded image bytes per request")
      ->envname("ENGRAM_MAX_REQUEST_IMAGE_BYTES")->capture_default_str();
  serve_cmd->add_option("--max-top-k", serve.max_top_k,
                        "largest top_k of memory and knowledge-base searches (leaderboard: 100)")
      ->envname("ENGRAM_MAX_TOP_K")->capture_default_str();
  serve_cmd->add_option("--max-metadata-bytes", serve.max_metadata_bytes,
                        "largest memory metadata (as JSON)")
      ->envname("ENGRAM_MAX_METADATA_BYTES")->capture_default_str();
  serve_cmd->add_option("--header-timeout-ms", serve.header_timeout_ms, "time allowed to send headers")
      ->envname("ENGRAM_HEADER_TIMEOUT_MS")->capture_default_str();
  serve_cmd->add_option("--body-timeout-ms", serve.body_timeout_ms, "time allowed to send the body")
      ->envname("ENGRAM_BODY_TIMEOUT_MS")->capture_default_str();
  serve_cmd->add_option("--idle-timeout-ms", serve.idle_timeout_ms, "keep-alive idle timeout")
      ->envname("ENGRAM_IDLE_TIMEOUT_MS")->capture_default_str();
  serve_cmd->add_option("--max-connections", serve.max_connections,
                        "open connections; beyond, an idle one is closed or the new one refused")
      ->envname("ENGRAM_MAX_CONNECTIONS")->capture_default_str();
  serve_cmd->add_option("--max-connections-per-client", serve.max_connections_per_client,
                        "open connections from one client address (0: no limit)")
      ->envname("ENGRAM_MAX_CONNECTIONS_PER_CLIENT")->capture_default_str();
  serve_cmd->add_option("--pressure-idle-timeout-ms", serve.pressure_idle_timeout_ms,
                        "idle wait for a request's first byte once over half the connections are open")
      ->envname("ENGRAM_PRESSURE_IDLE_TIMEOUT_MS")->capture_default_str();
  serve_cmd->add_option("--max-inflight-body-bytes", serve.max_inflight_body_bytes,
                        "request body bytes held at once over all connections (503 beyond)")
      ->envname("ENGRAM_MAX_INFLIGHT_BODY_BYTES")->capture_default_str();
  serve_cmd->add_option("--shutdown-grace-ms", serve.shutdown_grace_ms,
                        "time in-flight requests get on shutdown")
      ->envname("ENGRAM_SHUTDOWN_GRACE_MS")->capture_default_str();
  serve_cmd->add_option("--bm25-k1", serve.bm25_k1, "BM25 term-frequency saturation")
      ->envname("ENGRAM_BM25_K1")->capture_default_str();
  serve_cmd->add_option("--bm25-b", serve.bm25_b, "BM25 length normalisation")
      ->envname("ENGRAM_BM25_B")->capture_default_str();
  serve_cmd->add_option("--leaderboard-workspace", serve.leaderboard_workspace,
                        "workspace that holds leaderboard data (for workspace-scoped keys)")
      ->envname("ENGRAM_LEADERBOARD_WORKSPACE")->capture_default_str();
  serve_cmd->add_option("--embedder", serve.embedder,
                        "builtin (Universal Sentence Encoder lite), openai (OpenAI-compatible endpoint) or none")
      ->envname("ENGRAM_EMBEDDER")->capture_default_str();
  serve_cmd->add_option("--embed-precision", serve.embed_precision,
                        "built-in model arithmetic: auto (int8 where the CPU has AVX512_VNNI, else fp32), fp32 (reference-exact), bf16 (needs AVX512_BF16) or int8 (fastest; needs AVX512_VNNI)")
      ->envname("ENGRAM_EMBED_PRECISION")->capture_default_str();
  serve_cmd->add_option("--embed-url", serve.embed_url, "OpenAI-compatible base URL, e.g. http://host:8000/v1")
      ->envname("ENGRAM_EMBED_URL");
  serve_cmd->add_option("--embed-model", serve.embed_model, "embedding model name for --embedder openai")
      ->envname("ENGRAM_EMBED_MODEL");
  serve_cmd->add_option("--embed-api-key", serve.embed_api_key, "API key for the embedding endpoint")
      ->envname("ENGRAM_EMBED_API_KEY");
  serve_cmd->add_option("--embed-dimensions", serve.embed_dimensions,
                        "vector size to request (0: whatever the endpoint returns)")
      ->envname("ENGRAM_EMBED_DIMENSIONS")->capture_default_str();
  serve_cmd->add_option("--embed-timeout-ms", serve.embed_timeout_ms, "per-request timeout")
      ->envname("ENGRAM_EMBED_TIMEOUT_MS")->capture_default_str();
  serve_cmd->add_option("--embed-retries", serve.embed_retries, "retries on errors, 429 and 5xx")
      ->envname("ENGRAM_EMBED_RETRIES")->capture_default_str();
  serve_cmd->add_option("--model-dir", serve.model_dir,
                        "built-in model directory (default: third_party/model/package/dist next to build/)")
      ->envname("ENGRAM_MODEL_DIR");
  serve_cmd->add_option("--retrieval", serve.retrieval, "hybrid, bm25 or vector")
      ->envname("ENGRAM_RETRIEVAL")->capture_default_str();
  serve_cmd->add_option("--fusion", serve.fusion, "score (min-max score sum), zscore (standardised score sum) or rrf")
      ->envname("ENGRAM_FUSION")->capture_default_str();
  serve_cmd->add_option("--vector-weight", serve.vector_weight, "weight of the vector side in fusion")
      ->envname("ENGRAM_VECTOR_WEIGHT")->capture_default_str();
  serve_cmd->add_option("--neighbours", serve.neighbours, "turns before/after each hit added to results")
      ->envname("ENGRAM_NEIGHBOURS")->capture_default_str();
  serve_cmd->add_option("--neighbour-placement", serve.neighbour_placement,
                        "after (right after their hit) or scored (ranked by inherited score)")
      ->envname("ENGRAM_NEIGHBOUR_PLACEMENT")->capture_default_str();
  serve_cmd->add_option("--neighbour-weight", serve.neighbour_weight,
                        "fraction of a hit's score its neighbours inherit")
      ->envname("ENGRAM_NEIGHBOUR_WEIGHT")->capture_default_str();
  serve_cmd->add_option("--question-factor", serve.question_factor,
                        "own-score fraction a short turn ending with ? keeps (1: off)")
      ->envname("ENGRAM_QUESTION_FACTOR")->capture_default_str();
  serve_cmd->add_option("--reply-weight", serve.reply_weight,
                        "fraction of a short asking turn's score its reply inherits")
      ->envname("ENGRAM_REPLY_WEIGHT")->capture_default_str();
  serve_cmd->add_option("--window-share", serve.window_share,
                        "share of a neighbouring turn's BM25 term scores a turn may use (0: off)")
      ->envname("ENGRAM_WINDOW_SHARE")->capture_default_str();
  serve_cmd->add_option("--time-weight", serve.time_weight,
                        "boost of turns near the dates a query names, relative to the best score (0: off)")
      ->envname("ENGRAM_TIME_WEIGHT")->capture_default_str();
  serve_cmd->add_option("--hnsw-threshold", serve.hnsw_threshold,
                        "vectors in a scope before an HNSW graph replaces the exact scan (0: never)")
      ->envname("ENGRAM_HNSW_THRESHOLD")->capture_default_str();
  serve_cmd->add_option("--rerank", serve.rerank,
                        "Leaderboard and memory search reranking: none, or llm (the --llm-* endpoint; off by default)")
      ->envname("ENGRAM_RERANK")->capture_default_str();
  serve_cmd->add_option("--rerank-candidates", serve.rerank_candidates,
                        "best results of a search the reranker reorders")
      ->envname("ENGRAM_RERANK_CANDIDATES")->capture_default_str();
  serve_cmd->add_option("--rerank-timeout-ms", serve.rerank_timeout_ms,
                        "time a rerank may take (no retries); past it the search keeps its own order")
      ->envname("ENGRAM_RERANK_TIMEOUT_MS")->capture_default_str();
  serve_cmd->add_option("--extractor", serve.extractor,
                        "memory extraction: rules (built-in, offline) or llm (chat completions)")
      ->envname("ENGRAM_EXTRACTOR")->capture_default_str();
  serve_cmd->add_option("--llm-url", serve.llm_url, "OpenAI-compatible base URL, e.g. http://host:8000/v1")
      ->envname("ENGRAM_LLM_URL");
  serve_cmd->add_option("--llm-model", serve.llm_model, "chat model name for --extractor llm")
      ->envname("ENGRAM_LLM_MODEL");
  serve_cmd->add_option("--llm-api-key", serve.llm_api_key, "API key for the chat endpoint")
      ->envname("ENGRAM_LLM_API_KEY");
  serve_cmd->add_option("--llm-timeout-ms", serve.llm_timeout_ms, "per-request timeout")
      ->envname("ENGRAM_LLM_TIMEOUT_MS")->capture_default_str();
  serve_cmd->add_option("--llm-retries", serve.llm_retries, "retries on errors, 429 and 5xx")
      ->envname("ENGRAM_LLM_RETRIES")->capture_default_str();
  serve_cmd->add_option("--event-workers", serve.event_workers, "threads running memory extraction")
      ->envname("ENGRAM_EVENT_WORKERS")->capture_default_str();
  // --- Skills ---
  serve_cmd->add_option("--skill-max-files", serve.skill_max_files, "files an imported skill ZIP may hold")
      ->envname("ENGRAM_SKILL_MAX_FILES")->capture_default_str();
  serve_cmd->add_option("--skill-max-bytes", serve.skill_max_bytes,
                        "decompressed bytes an imported skill ZIP may hold (zip bomb limit)")
      ->envname("ENGRAM_SKILL_MAX_BYTES")->capture_default_str();
  serve_cmd->add_option("--skill-workers", serve.skill_workers, "threads running skill extraction")
      ->envname("ENGRAM_SKILL_WORKERS")->capture_default_str();
  // --- Knowledge bases ---
  serve_cmd->add_option("--import-dir", serve.import_dir,
                        "directory LOCAL knowledge-base documents are read from (nothing outside it)")
      ->envname("ENGRAM_IMPORT_DIR");
  serve_cmd->add_flag("--remote-fetch", serve.remote_fetch,
                      "allow http(s):// knowledge-base document URLs (public addresses only)")
      ->envname("ENGRAM_REMOTE_FETCH");
  serve_cmd->add_flag("--remote-fetch-allow-private", serve.remote_fetch_allow_private,
                      "let remote fetches reach loopback and private addresses (tests only)");
  serve_cmd->add_option("--oss-endpoint", serve.oss_endpoint,
                        "S3-compatible endpoint for oss://bucket/key documents, e.g. https://oss-cn-hangzhou.aliyuncs.com")
      ->envname("ENGRAM_OSS_ENDPOINT");
  serve_cmd->add_option("--oss-region", serve.oss_region, "region for AWS SigV4 signing")
      ->envname("ENGRAM_OSS_REGION")->capture_default_str();
  serve_cmd->add_option("--oss-access-key", serve.oss_access_key, "OSS access key id")
      ->envname("ENGRAM_OSS_ACCESS_KEY");
  serve_cmd->add_option("--oss-secret-key", serve.oss_secret_key, "OSS secret access key")
      ->envname("ENGRAM_OSS_SECRET_KEY");
  serve_cmd->add_option("--kb-max-doc-bytes", serve.kb_max_doc_bytes, "largest knowledge-base document")
      ->envname("ENGRAM_KB_MAX_DOC_BYTES")->capture_default_str();
  serve_cmd->add_option("--kb-chunk-size", serve.kb_chunk_size, "bytes of text per chunk at most")
      ->envname("ENGRAM_KB_CHUNK_SIZE")->capture_default_str();
  serve_cmd->add_option("--kb-chunk-overlap", serve.kb_chunk_overlap,
                        "bytes repeated between consecutive chunks")
      ->envname("ENGRAM_KB_CHUNK_OVERLAP")->capture_default_str();
  serve_cmd->add_option("--kb-workers", serve.kb_workers, "document ingestion threads")
      ->envname("ENGRAM_KB_WORKERS")->capture_default_str();
  serve_cmd->add_option("--kb-pdf-timeout-ms", serve.kb_pdf_timeout_ms, "time pdftotext gets per PDF")
      ->envname("ENGRAM_KB_PDF_TIMEOUT_MS")->capture_default_str();
  // --- end Knowledge bases ---
  // --- OCR ---
  serve_cmd->add_flag("--ocr,!--no-ocr", serve.ocr,
                      "read the text in leaderboard images (tesseract) so searches find it")
      ->envname("ENGRAM_OCR")->capture_default_str();
  serve_cmd->add_option("--ocr-timeout-ms", serve.ocr_timeout_ms, "OCR time per image")
      ->envname("ENGRAM_OCR_TIMEOUT_MS")->capture_default_str();
  // --- end OCR ---
  // --- Several nodes ---
  serve_cmd->add_option("--store-url", serve.store_url,
                        "PostgreSQL URL shared by several nodes (default: SQLite in --data-dir)")
      ->envname("ENGRAM_STORE_URL");
  serve_cmd->add_option("--store-connections", serve.store_connections, "PostgreSQL connections")
      ->envname("ENGRAM_STORE_CONNECTIONS")->capture_default_str();
  serve_cmd->add_option("--node-id", serve.node_id, "this node's name in job leases (default: random)")
      ->envname("ENGRAM_NODE_ID");
  serve_cmd->add_option("--job-lease-ms", serve.job_lease_ms,
                        "another node takes over the jobs of a node silent for this long")
      ->envname("ENGRAM_JOB_LEASE_MS")->capture_default_str();
  serve_cmd->add_option("--job-poll-ms", serve.job_poll_ms, "how often to look for such jobs")
      ->envname("ENGRAM_JOB_POLL_MS")->capture_default_str();
  serve_cmd->add_option("--shard-memory-mb", serve.shard_memory_mb,
                        "leaderboard index shards kept in RAM at most (LRU; 0 = no limit)")
      ->envname("ENGRAM_SHARD_MEMORY_MB")->capture_default_str();
  // --- end several nodes ---
  serve_cmd->add_option("--leaderboard-retention-days", serve.leaderboard_retention_days,
                        "delete leaderboard users idle this many days (fractions allowed; 0 = never)")
      ->envname("ENGRAM_LEADERBOARD_RETENTION_DAYS")->capture_default_str();
  serve_cmd->add_option("--leaderboard-idempotency-ttl-days", serve.leaderboard_idempotency_ttl_days,
                        "keep leaderboard request_id records this many days (longer than any retry "
                        "window; 0 = forever)")
      ->envname("ENGRAM_LEADERBOARD_IDEMPOTENCY_TTL_DAYS")->capture_default_str();
  serve_cmd->add_option("--log-level", serve.log_level, "trace, debug (access log), info, warn, error")
      ->envname("ENGRAM_LOG_LEVEL")->capture_default_str();

  std::vector<std::string> embed_texts;
  bool embed_similarity = false;
  std::string embed_model_dir;
  auto* embed_cmd = app.add_subcommand("embed", "print the built-in model's vector for each text");
  embed_cmd->add_option("texts", embed_texts, "texts to embed")->required();
  embed_cmd->add_flag("--similarity", embed_similarity, "print the cosine similarity of two texts");
  embed_cmd->add_option("--model-dir", embed_model_dir, "built-in model directory")
      ->envname("ENGRAM_MODEL_DIR");

  // MCP over stdin/stdout for hosts that launch a command, relayed to a running server
  // (src/mcp/http_relay.h says why; docs/mcp.md).
  engram::mcp::HttpRelayOptions mcp_relay;
  auto* mcp_cmd = app.add_subcommand(
      "mcp", "speak MCP on stdin/stdout, relaying every message to a running engram serve");
  mcp_cmd->add_option("--url", mcp_relay.url, "the server (http://HOST:PORT) or its MCP endpoint URL")
      ->envname("ENGRAM_URL")->capture_default_str();
  mcp_cmd->add_option("--api-key", mcp_relay.api_key, "API key sent as Authorization: Bearer")
      ->envname("ENGRAM_API_KEY");
  mcp_cmd->add_option("--workspace", mcp_relay.workspace, "workspace (default: default)")
      ->envname("ENGRAM_WORKSPACE");

  app.add_subcommand("version", "print the version and the source revision")->callback([] {
    const engram::BuildInfo info = engram::GetBuildInfo();
    std::cout << "engram " << info.version << " (" << info.revision << ", " << info.build_type
              << ", " << info.compiler << ")" << std::endl;
  });

  std::vector<std::string> args(argv + 1, argv + argc);
  for (size_t i = 1; i < args.size(); ++i) {
    if (args[0] != "serve") break;
    if (args[i] == "--config" && i + 1 < args.size()) {
      std::string file = args[i + 1];
      args.erase(args.begin() + static_cast<long>(i), args.begin() + static_cast<long>(i) + 2);
      args.insert(args.begin(), {"--config", file});
      break;
    }
    if (args[i].rfind("--config=", 0) == 0) {
      std::string opt = args[i];
      args.erase(args.begin() + static_cast<long>(i));
      args.insert(args.begin(), opt);
      break;
    }
  }
  std::reverse(args.begin(), args.end());  // CLI11 takes a reversed vector
  try {
    app.parse(args);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  }

  if (mcp_cmd->parsed()) return engram::mcp::RunMcpStdio(std::move(mcp_relay));
  if (embed_cmd->parsed()) {
    return engram::RunEmbedCommand(
        embed_model_dir.empty() ? engram::DefaultModelDir() : embed_model_dir, embed_texts,
        embed_similarity, std::cout, std::cerr);
  }
  if (serve_cmd->parsed()) {
    if (serve.api_keys.empty()) {
      if (const char* env = std::getenv("ENGRAM_API_KEYS")) {
        serve.api_keys = SplitCommaList(env);
        // Set but empty (or only commas) is refused by Validate, not taken for "unset".
        if (serve.api_keys.empty()) serve.api_keys.emplace_back();
      }
    }
    spdlog::set_level(spdlog::level::from_str(serve.log_level));
    return engram::RunServe(std::move(serve));
  }
  return 0;
}
