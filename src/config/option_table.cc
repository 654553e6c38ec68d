#include "config/option_table.h"

#include <fmt/format.h>

#include <cmath>
#include <type_traits>

namespace engram {

namespace {

const std::vector<OptionSpec>& Table() {
  // clang-format off
  static const std::vector<OptionSpec> table = {
      {.name = "listen", .field = &ServeOptions::listen, .help = "HOST:PORT to listen on (port 0: any free port; the server prints `engram listening on HOST:PORT`)"},
      {.name = "data-dir", .field = &ServeOptions::data_dir, .help = "directory of the SQLite database and the intake journal"},
      {.name = "api-key", .field = &ServeOptions::api_keys, .help = "API key, repeatable: KEY (every workspace) or KEY:ws1:ws2 (only those); none: development mode, loopback only", .env = "ENGRAM_API_KEYS"},
      {.name = "store-url", .field = &ServeOptions::store_url, .help = "PostgreSQL URL (postgresql://user:pw@host:port/db) shared by several nodes; empty: SQLite in --data-dir"},
      {.name = "log-level", .field = &ServeOptions::log_level, .help = "log level; debug adds an access log (ids, sizes, timings, never content)", .choices = {"trace", "debug", "info", "warn", "error", "off"}},
      {.name = "io-threads", .field = &ServeOptions::io_threads, .help = "network threads, which also run searches (0: one per core, at least 2)", .tier = OptionTier::kAdvanced, .min = 0, .max = 256},
      {.name = "worker-threads", .field = &ServeOptions::worker_threads, .help = "request handler threads (handlers block on fsync)", .tier = OptionTier::kAdvanced, .min = 1, .max = 1024},
      {.name = "compute-slots", .field = &ServeOptions::compute_slots, .help = "searches run at once on the network threads when store and model are local (0: one per core)", .tier = OptionTier::kAdvanced, .min = 0, .max = 1024},
      {.name = "max-body-bytes", .field = &ServeOptions::max_body_bytes, .help = "request body limit (413 beyond)", .min = 1024},
      {.name = "max-header-bytes", .field = &ServeOptions::max_header_bytes, .help = "request header limit (413 beyond)", .tier = OptionTier::kAdvanced, .min = 1024},
      {.name = "max-image-bytes", .field = &ServeOptions::max_image_bytes, .help = "largest decoded image (413 beyond)", .min = 1024},
      {.name = "max-request-image-bytes", .field = &ServeOptions::max_request_image_bytes, .help = "decoded image bytes per request (413 beyond)", .tier = OptionTier::kAdvanced, .min = 1024},
      {.name = "max-top-k", .field = &ServeOptions::max_top_k, .help = "largest top_k of memory and knowledge-base searches (the Leaderboard's is 100)", .min = 1, .max = 10000},
      {.name = "max-metadata-bytes", .field = &ServeOptions::max_metadata_bytes, .help = "largest memory metadata, as JSON (400 beyond)", .tier = OptionTier::kAdvanced, .min = 2},
      {.name = "header-timeout-ms", .field = &ServeOptions::header_timeout_ms, .help = "time allowed to send the request header", .tier = OptionTier::kAdvanced, .min = 1},
      {.name = "body-timeout-ms", .field = &ServeOptions::body_timeout_ms, .help = "time allowed to send the request body", .tier = OptionTier::kAdvanced, .min = 1},
      {.name = "idle-timeout-ms", .field = &ServeOptions::idle_timeout_ms, .help = "keep-alive wait for the next request", .tier = OptionTier::kAdvanced, .min = 1},
      {.name = "max-connections", .field = &ServeOptions::max_connections, .help = "open connections; at the limit an idle one is closed for a new one, else the new one gets 503", .min = 1, .max = 1000000},
      {.name = "max-connections-per-client", .field = &ServeOptions::max_connections_per_client, .help = "open connections from one client address (0: no limit)", .min = 0, .max = 1000000},
      {.name = "pressure-idle-timeout-ms", .field = &ServeOptions::pressure_idle_timeout_ms, .help = "wait for a request's first byte once over half of --max-connections are open", .tier = OptionTier::kAdvanced, .min = 1},
      {.name = "max-inflight-body-bytes", .field = &ServeOptions::max_inflight_body_bytes, .help = "request body bytes held at once over all connections (503 with Retry-After beyond)", .min = 1024},
      {.name = "shutdown-grace-ms", .field = &ServeOptions::shutdown_grace_ms, .help = "on SIGTERM, time in-flight requests get to finish", .min = 0},
      {.name = "bm25-k1", .field = &ServeOptions::bm25_k1, .help = "BM25 term-frequency saturation", .tier = OptionTier::kAdvanced, .min = 0, .max = 10},
      {.name = "bm25-b", .field = &ServeOptions::bm25_b, .help = "BM25 length normalisation", .tier = OptionTier::kAdvanced, .min = 0, .max = 1},
      {.name = "leaderboard-workspace", .field = &ServeOptions::leaderboard_workspace, .help = "workspace that holds Leaderboard data (for workspace-limited keys)", .tier = OptionTier::kAdvanced},
      {.name = "embedder", .field = &ServeOptions::embedder, .help = "embeddings: builtin (Universal Sentence Encoder lite), openai (an OpenAI-compatible endpoint) or none (BM25 only)", .choices = {"builtin", "openai", "none"}},
      {.name = "embed-precision", .field = &ServeOptions::embed_precision, .help = "built-in model arithmetic: auto (int8 where it is faster than fp32: AVX512_VNNI, AVX-VNNI, or AVX2 without AVX-512; else fp32), fp32 (reference-exact), bf16 (AVX512_BF16), int8 (any CPU; the same vectors on each)", .choices = {"auto", "fp32", "bf16", "int8"}},
      {.name = "kernels", .field = &ServeOptions::kernels, .help = "instruction sets of the built-in model's kernels and the int8 vector scan: auto (the widest this CPU runs) or a family to force, for tests and comparisons (a family the CPU lacks stops the start)", .tier = OptionTier::kAdvanced, .choices = {"auto", "scalar", "avx2", "avxvnni", "avx512", "neon"}},
      {.name = "embed-url", .field = &ServeOptions::embed_url, .help = "OpenAI-compatible base URL for --embedder openai, e.g. http://host:8000/v1"},
      {.name = "embed-model", .field = &ServeOptions::embed_model, .help = "embedding model name for --embedder openai"},
      {.name = "embed-api-key", .field = &ServeOptions::embed_api_key, .help = "API key of the embedding endpoint"},
      {.name = "embed-dimensions", .field = &ServeOptions::embed_dimensions, .help = "vector size to request (0: whatever the endpoint returns)", .tier = OptionTier::kAdvanced, .min = 0, .max = 65536},
      {.name = "embed-timeout-ms", .field = &ServeOptions::embed_timeout_ms, .help = "embedding request timeout", .tier = OptionTier::kAdvanced, .min = 1},
      {.name = "embed-retries", .field = &ServeOptions::embed_retries, .help = "embedding retries on errors, 429 and 5xx", .tier = OptionTier::kAdvanced, .min = 0, .max = 10},
      {.name = "query-cache-entries", .field = &ServeOptions::query_cache_entries, .help = "recent search queries whose vectors are kept in memory (LRU by model and exact query text, ~2 KiB each); a repeated query skips the model (0: off)", .tier = OptionTier::kAdvanced, .min = 0, .max = 1000000},
      {.name = "model-dir", .field = &ServeOptions::model_dir, .help = "built-in model directory (default: share/engram/model beside the installed binary, or third_party/model/package/dist in a build tree)"},
      {.name = "retrieval", .field = &ServeOptions::retrieval, .help = "retrieval: hybrid, or one side alone (for baselines)", .tier = OptionTier::kAdvanced, .choices = {"hybrid", "bm25", "vector"}},
      {.name = "fusion", .field = &ServeOptions::fusion, .help = "fusion of BM25 and vector scores: zscore (standardised sum), score (min-max sum) or rrf", .tier = OptionTier::kAdvanced, .choices = {"zscore", "score", "rrf"}},
      {.name = "vector-weight", .field = &ServeOptions::vector_weight, .help = "weight of the vector side in fusion", .tier = OptionTier::kAdvanced, .min = 0, .max = 1},
      {.name = "neighbours", .field = &ServeOptions::neighbours, .help = "turns before and after each hit added to results (Leaderboard turns; V4 verbatim memories of one session)", .tier = OptionTier::kAdvanced, .min = 0, .max = 5},
      {.name = "neighbour-placement", .field = &ServeOptions::neighbour_placement, .help = "neighbours ranked by inherited score (scored) or right after their hit (after)", .tier = OptionTier::kAdvanced, .choices = {"scored", "after"}},
      {.name = "neighbour-weight", .field = &ServeOptions::neighbour_weight, .help = "fraction of a hit's score its neighbours inherit", .tier = OptionTier::kAdvanced, .min = 0, .max = 1},
      {.name = "question-factor", .field = &ServeOptions::question_factor, .help = "fraction of its score a short turn ending with a question mark keeps (1: off)", .tier = OptionTier::kAdvanced, .min = 0, .max = 1},
      {.name = "reply-weight", .field = &ServeOptions::reply_weight, .help = "fraction of a short asking turn's score its reply inherits", .tier = OptionTier::kAdvanced, .min = 0, .max = 1},
      {.name = "window-share", .field = &ServeOptions::window_share, .help = "share of a neighbouring turn's BM25 term scores a turn may use (0: each turn alone)", .tier = OptionTier::kAdvanced, .min = 0, .max = 1},
      {.name = "time-weight", .field = &ServeOptions::time_weight, .help = "boost of turns near the dates a query names, relative to the best score (0: off)", .tier = OptionTier::kAdvanced, .min = 0, .max = 5},
      {.name = "hnsw-threshold", .field = &ServeOptions::hnsw_threshold, .help = "vectors in a scope before an HNSW graph replaces the exact scan (0: never)", .tier = OptionTier::kAdvanced, .min = 0},
      {.name = "rerank", .field = &ServeOptions::rerank, .help = "reranking of Leaderboard and memory searches by the --llm-* endpoint (none: off)", .choices = {"none", "llm"}},
      {.name = "rerank-candidates", .field = &ServeOptions::rerank_candidates, .help = "best results of a search the reranker reorders", .tier = OptionTier::kAdvanced, .min = 2, .max = 100},
      {.name = "rerank-timeout-ms", .field = &ServeOptions::rerank_timeout_ms, .help = "time a rerank may take; past it the search keeps its own order", .tier = OptionTier::kAdvanced, .min = 100, .max = 600000},
      {.name = "extractor", .field = &ServeOptions::extractor, .help = "memory extraction: rules (built-in, offline) or llm (an OpenAI-compatible chat-completions endpoint)", .choices = {"rules", "llm"}},
      {.name = "llm-url", .field = &ServeOptions::llm_url, .help = "OpenAI-compatible base URL for --extractor llm and --rerank llm, e.g. http://127.0.0.1:11434/v1"},
      {.name = "llm-model", .field = &ServeOptions::llm_model, .help = "chat model name"},
      {.name = "llm-api-key", .field = &ServeOptions::llm_api_key, .help = "API key of the chat endpoint"},
      {.name = "llm-timeout-ms", .field = &ServeOptions::llm_timeout_ms, .help = "chat request timeout", .tier = OptionTier::kAdvanced, .min = 100, .max = 600000},
      {.name = "llm-retries", .field = &ServeOptions::llm_retries, .help = "chat retries on errors, 429 and 5xx", .tier = OptionTier::kAdvanced, .min = 0, .max = 10},
      {.name = "event-workers", .field = &ServeOptions::event_workers, .help = "threads running memory events (extraction, reconciliation)", .tier = OptionTier::kAdvanced, .min = 1, .max = 64},
      {.name = "skill-max-files", .field = &ServeOptions::skill_max_files, .help = "files an imported skill ZIP may hold", .tier = OptionTier::kAdvanced, .min = 1, .max = 100000},
      {.name = "skill-max-bytes", .field = &ServeOptions::skill_max_bytes, .help = "decompressed bytes an imported skill ZIP may hold (zip bomb limit)", .tier = OptionTier::kAdvanced, .min = 1024, .max = 4294967296},
      {.name = "skill-workers", .field = &ServeOptions::skill_workers, .help = "threads running skill extraction", .tier = OptionTier::kAdvanced, .min = 1, .max = 64},
      {.name = "import-dir", .field = &ServeOptions::import_dir, .help = "directory LOCAL knowledge-base documents are read from (nothing outside it; empty: none)"},
      {.name = "remote-fetch", .field = &ServeOptions::remote_fetch, .help = "allow http(s):// knowledge-base document URLs (public addresses only)"},
      {.name = "remote-fetch-allow-private", .field = &ServeOptions::remote_fetch_allow_private, .help = "let remote fetches reach loopback and private addresses (for tests only)", .tier = OptionTier::kAdvanced},
      {.name = "oss-endpoint", .field = &ServeOptions::oss_endpoint, .help = "S3-compatible endpoint for oss://bucket/key documents"},
      {.name = "oss-region", .field = &ServeOptions::oss_region, .help = "region for AWS SigV4 signing", .tier = OptionTier::kAdvanced},
      {.name = "oss-access-key", .field = &ServeOptions::oss_access_key, .help = "OSS access key id"},
      {.name = "oss-secret-key", .field = &ServeOptions::oss_secret_key, .help = "OSS secret access key"},
      {.name = "kb-max-doc-bytes", .field = &ServeOptions::kb_max_doc_bytes, .help = "largest knowledge-base document", .tier = OptionTier::kAdvanced, .min = 1024},
      {.name = "kb-chunk-size", .field = &ServeOptions::kb_chunk_size, .help = "bytes of text per chunk at most", .tier = OptionTier::kAdvanced, .min = 100, .max = 100000},
      {.name = "kb-chunk-overlap", .field = &ServeOptions::kb_chunk_overlap, .help = "bytes repeated between consecutive chunks (at most half of --kb-chunk-size)", .tier = OptionTier::kAdvanced, .min = 0, .max = 50000},
      {.name = "kb-workers", .field = &ServeOptions::kb_workers, .help = "document ingestion threads", .tier = OptionTier::kAdvanced, .min = 1, .max = 64},
      {.name = "kb-pdf-timeout-ms", .field = &ServeOptions::kb_pdf_timeout_ms, .help = "time pdftotext gets per PDF", .tier = OptionTier::kAdvanced, .min = 100, .max = 600000},
      {.name = "ocr", .field = &ServeOptions::ocr, .help = "read the text in Leaderboard images (tesseract) so searches find it (--no-ocr: off)"},
      {.name = "ocr-timeout-ms", .field = &ServeOptions::ocr_timeout_ms, .help = "OCR time per image", .tier = OptionTier::kAdvanced, .min = 100, .max = 600000},
      {.name = "store-connections", .field = &ServeOptions::store_connections, .help = "PostgreSQL connections of this node", .tier = OptionTier::kAdvanced, .min = 1, .max = 256},
      {.name = "node-id", .field = &ServeOptions::node_id, .help = "this node's name in job leases (empty: a random one)", .tier = OptionTier::kAdvanced},
      {.name = "job-lease-ms", .field = &ServeOptions::job_lease_ms, .help = "another node takes over the jobs of a node silent for this long", .tier = OptionTier::kAdvanced, .min = 1000, .max = 3600000},
      {.name = "job-poll-ms", .field = &ServeOptions::job_poll_ms, .help = "how often a node looks for such jobs (at most --job-lease-ms)", .tier = OptionTier::kAdvanced, .min = 100, .max = 3600000},
      {.name = "shard-memory-mb", .field = &ServeOptions::shard_memory_mb, .help = "in-memory index shards of all domains (Leaderboard scopes, V4 memory workspaces, knowledge bases, skills) kept in RAM at most, least recently used idle ones dropped first and reloaded on use (0: no limit)", .min = 0},
      {.name = "leaderboard-retention-days", .field = &ServeOptions::leaderboard_retention_days, .help = "delete Leaderboard users idle this many days (fractions allowed; 0: never)", .min = 0, .max = 36500},
      {.name = "leaderboard-idempotency-ttl-days", .field = &ServeOptions::leaderboard_idempotency_ttl_days, .help = "keep Leaderboard request_id records this many days (longer than any retry window; 0: forever)", .min = 0, .max = 36500},
      {.name = "mem0-workspace", .field = &ServeOptions::mem0_workspace, .help = "workspace of mem0-API requests that name no project_id and whose key is not limited to one workspace"},
  };
  // clang-format on
  return table;
}

std::string JoinChoices(const std::vector<std::string_view>& choices) {
  std::string out;
  for (size_t i = 0; i < choices.size(); ++i) {
    if (i > 0) out += ", ";
    out += choices[i];
  }
  return out;
}

// A bound for messages and docs: integers without a fraction, 4294967296 not 4.29497e+09.
std::string Number(double v) {
  if (std::floor(v) == v && std::fabs(v) < 1e18) return fmt::format("{}", static_cast<int64_t>(v));
  return fmt::format("{}", v);
}

std::string RangeText(const OptionSpec& spec) {
  const bool has_min = std::isfinite(spec.min), has_max = std::isfinite(spec.max);
  if (has_min && has_max) return Number(spec.min) + "-" + Number(spec.max);
  if (has_min) return "at least " + Number(spec.min);
  if (has_max) return "at most " + Number(spec.max);
  return "";
}

std::string DefaultText(const OptionSpec& spec, const ServeOptions& defaults) {
  return std::visit(
      [&](auto member) -> std::string {
        const auto& value = defaults.*member;
        using T = std::decay_t<decltype(value)>;
        if constexpr (std::is_same_v<T, std::string>) {
          return value.empty() ? "(empty)" : "`" + value + "`";
        } else if constexpr (std::is_same_v<T, std::vector<std::string>>) {
          return value.empty() ? "(none)" : "`" + fmt::format("{}", fmt::join(value, ",")) + "`";
        } else if constexpr (std::is_same_v<T, bool>) {
          return value ? "on" : "off";
        } else if constexpr (std::is_same_v<T, double>) {
          return fmt::format("{}", value);
        } else {
          return fmt::format("{}", value);
        }
      },
      spec.field);
}

}  // namespace

std::span<const OptionSpec> ServeOptionTable() { return Table(); }

std::string OptionEnvName(const OptionSpec& spec) {
  if (!spec.env.empty()) return std::string(spec.env);
  std::string out = "ENGRAM_";
  for (char c : spec.name)
    out.push_back(c == '-' ? '_' : static_cast<char>(c >= 'a' && c <= 'z' ? c - 'a' + 'A' : c));
  return out;
}

Status CheckOptionValues(const ServeOptions& options) {
  for (const OptionSpec& spec : Table()) {
    Status st = std::visit(
        [&](auto member) -> Status {
          const auto& value = options.*member;
          using T = std::decay_t<decltype(value)>;
          if constexpr (std::is_same_v<T, std::string>) {
            if (spec.choices.empty()) return Status::Ok();
            for (std::string_view choice : spec.choices) {
              if (value == choice) return Status::Ok();
            }
            return Status::InvalidParameter(fmt::format("--{} must be one of {}; got \"{}\"",
                                                        spec.name, JoinChoices(spec.choices),
                                                        value.substr(0, 64)));
          } else if constexpr (std::is_arithmetic_v<T> && !std::is_same_v<T, bool>) {
            const double v = static_cast<double>(value);
            if (v >= spec.min && v <= spec.max) return Status::Ok();
            return Status::InvalidParameter(
                fmt::format("--{} must be {}, got {}", spec.name, RangeText(spec), value));
          } else {
            return Status::Ok();
          }
        },
        spec.field);
    if (!st.ok()) return st;
  }
  return Status::Ok();
}

std::string ConfigurationMarkdown() {
  const ServeOptions defaults;
  std::string out =
      "# Configuration\n\n"
      "<!-- Generated by `engram config-doc` from src/config/option_table.cc; a test checks that\n"
      "     this file matches it. Edit the table, then run the command to rewrite this file. "
      "-->\n\n"
      "`engram serve` reads each setting from a flag, the config file (`--config FILE`: TOML or "
      "INI\n"
      "with a `[serve]` section whose keys are the flag names) and an `ENGRAM_*` environment\n"
      "variable. Flags win, then the config file, then the environment. Every value is checked "
      "the\n"
      "same way whichever way it came: a value outside its range, or a name outside a setting's\n"
      "choices, stops the server at start with a message naming the setting and what it "
      "accepts.\n\n"
      "```toml\n[serve]\nlisten = \"0.0.0.0:8080\"\ndata-dir = \"/var/lib/engram\"\n"
      "api-key = [\"k-admin\", \"k-team:alpha:beta\"]\n```\n";
  for (OptionTier tier : {OptionTier::kOperator, OptionTier::kAdvanced}) {
    out += tier == OptionTier::kOperator
               ? "\n## Operator settings\n\nWhat a deployment sets: address, keys, store, "
                 "endpoints, limits.\n\n"
               : "\n## Advanced settings\n\nRetrieval tuning and internals. The defaults are "
                 "the measured ones (docs/benchmarks.md); the benchmarks pass other values as "
                 "flags to compare them.\n\n";
    out += "| flag | environment | default | accepts | meaning |\n|---|---|---|---|---|\n";
    for (const OptionSpec& spec : Table()) {
      if (spec.tier != tier) continue;
      std::string accepts = spec.choices.empty() ? RangeText(spec) : JoinChoices(spec.choices);
      if (std::holds_alternative<bool ServeOptions::*>(spec.field)) accepts = "flag";
      std::string flag = "`--" + std::string(spec.name) + "`";
      if (std::holds_alternative<bool ServeOptions::*>(spec.field) &&
          defaults.*std::get<bool ServeOptions::*>(spec.field)) {
        flag += ", `--no-" + std::string(spec.name) + "`";
      }
      out += fmt::format("| {} | `{}` | {} | {} | {} |\n", flag, OptionEnvName(spec),
                         DefaultText(spec, defaults), accepts, spec.help);
    }
  }
  return out;
}

}  // namespace engram
