#include "config/serve_options.h"

#include <fmt/format.h>

namespace engram {

bool IsLoopbackHost(const std::string& host) {
  return host == "localhost" || host == "::1" || host == "[::1]" || host.rfind("127.", 0) == 0;
}

Status ServeOptions::Validate() {
  for (auto [name, days] : {std::pair{"--leaderboard-retention-days", leaderboard_retention_days},
                             {"--leaderboard-idempotency-ttl-days",
                              leaderboard_idempotency_ttl_days}}) {
    if (!(days >= 0 && days <= 36500)) {
      return Status::InvalidParameter(fmt::format("{} must be between 0 and 36500", name));
    }
  }
  size_t colon = listen.rfind(':');
  if (colon == std::string::npos || colon == 0 || colon + 1 == listen.size()) {
    return Status::InvalidParameter(fmt::format("--listen must be HOST:PORT, got \"{}\"", listen));
  }
  host = listen.substr(0, colon);
  if (host.size() > 2 && host.front() == '[' && host.back() == ']')
    host = host.substr(1, host.size() - 2);
  std::string port_text = listen.substr(colon + 1);
  int64_t p = 0;
  for (char c : port_text) {
    if (c < '0' || c > '9' || p > 65535) {
      return Status::InvalidParameter(
          fmt::format("--listen port must be 0-65535, got \"{}\"", port_text));
    }
    p = p * 10 + (c - '0');
  }
  if (p > 65535) {
    return Status::InvalidParameter(
        fmt::format("--listen port must be 0-65535, got \"{}\"", port_text));
  }
  port = static_cast<uint16_t>(p);
  // An empty key is refused rather than read as "no key": `--api-key ""` (or an empty
  // ENGRAM_API_KEYS, or api-key = "" in the config file) is a deployment whose key variable came
  // out empty, and starting keyless would open every workspace. Leaving the key unset is how to
  // ask for development mode.
  bool has_keys = false;
  for (const auto& k : api_keys) {
    if (k.find_first_not_of(" \t") == std::string::npos) {
      return Status::InvalidParameter(
          "an empty API key was given (--api-key, api-key in the config file or ENGRAM_API_KEYS); "
          "refusing to start without keys: set a key, or leave it unset for development mode");
    }
    has_keys = true;
  }
  if (!has_keys && !IsLoopbackHost(host)) {
    return Status::InvalidParameter(
        fmt::format("no API key configured: development mode only listens on loopback; refusing {} "
                    "(set --api-key or ENGRAM_API_KEYS)",
                    host));
  }
  if (data_dir.empty()) return Status::InvalidParameter("--data-dir must not be empty");
  if (io_threads < 0 || io_threads > 256)
    return Status::InvalidParameter("--io-threads must be 0-256 (0: one per core)");
  if (worker_threads < 1 || worker_threads > 1024) {
    return Status::InvalidParameter("--worker-threads must be 1-1024");
  }
  if (compute_slots < 0 || compute_slots > 1024) {
    return Status::InvalidParameter("--compute-slots must be 0-1024 (0: one per core)");
  }
  if (max_body_bytes < 1024)
    return Status::InvalidParameter("--max-body-bytes must be at least 1024");
  if (max_header_bytes < 1024)
    return Status::InvalidParameter("--max-header-bytes must be at least 1024");
  // Image limits above the body limit are harmless (the body limit answers first), so lowering
  // --max-body-bytes alone stays valid.
  if (max_image_bytes < 1024)
    return Status::InvalidParameter("--max-image-bytes must be at least 1024");
  if (max_request_image_bytes < max_image_bytes) {
    return Status::InvalidParameter("--max-request-image-bytes must be at least --max-image-bytes");
  }
  if (max_top_k < 1 || max_top_k > 10000)
    return Status::InvalidParameter("--max-top-k must be 1-10000");
  if (max_metadata_bytes < 2)
    return Status::InvalidParameter("--max-metadata-bytes must be at least 2");
  if (header_timeout_ms < 1 || body_timeout_ms < 1 || idle_timeout_ms < 1 ||
      pressure_idle_timeout_ms < 1) {
    return Status::InvalidParameter("timeouts must be positive");
  }
  if (max_connections < 1 || max_connections > 1000000) {
    return Status::InvalidParameter("--max-connections must be 1-1000000");
  }
  if (max_connections_per_client > max_connections) {
    return Status::InvalidParameter(
        "--max-connections-per-client must be at most --max-connections (0: no limit)");
  }
  if (max_inflight_body_bytes < max_body_bytes) {
    return Status::InvalidParameter(
        "--max-inflight-body-bytes must be at least --max-body-bytes (else the largest allowed "
        "request could never be received)");
  }
  if (bm25_k1 < 0 || bm25_k1 > 10) return Status::InvalidParameter("--bm25-k1 must be in 0..10");
  if (bm25_b < 0 || bm25_b > 1) return Status::InvalidParameter("--bm25-b must be in 0..1");
  if (embedder != "builtin" && embedder != "openai" && embedder != "none") {
    return Status::InvalidParameter("--embedder must be builtin, openai or none");
  }
  if (embed_precision != "auto" && embed_precision != "fp32" && embed_precision != "bf16" &&
      embed_precision != "int8") {
    return Status::InvalidParameter("--embed-precision must be auto, fp32, bf16 or int8");
  }
  if (embedder == "openai" && (embed_url.empty() || embed_model.empty())) {
    return Status::InvalidParameter("--embedder openai needs --embed-url and --embed-model");
  }
  if (embed_dimensions < 0 || embed_dimensions > 65536) {
    return Status::InvalidParameter("--embed-dimensions must be 0-65536");
  }
  if (embed_timeout_ms < 1 || embed_retries < 0 || embed_retries > 10) {
    return Status::InvalidParameter("--embed-timeout-ms must be positive and --embed-retries 0-10");
  }
  if (retrieval != "hybrid" && retrieval != "bm25" && retrieval != "vector") {
    return Status::InvalidParameter("--retrieval must be hybrid, bm25 or vector");
  }
  if (retrieval != "bm25" && embedder == "none") {
    return Status::InvalidParameter("--retrieval " + retrieval +
                                    " needs an embedder (--embedder builtin)");
  }
  if (fusion != "score" && fusion != "zscore" && fusion != "rrf") {
    return Status::InvalidParameter("--fusion must be score, zscore or rrf");
  }
  if (vector_weight < 0 || vector_weight > 1)
    return Status::InvalidParameter("--vector-weight must be in 0..1");
  if (neighbours < 0 || neighbours > 5) return Status::InvalidParameter("--neighbours must be 0-5");
  if (neighbour_placement != "after" && neighbour_placement != "scored") {
    return Status::InvalidParameter("--neighbour-placement must be after or scored");
  }
  if (window_share < 0 || window_share > 1) {
    return Status::InvalidParameter("--window-share must be in 0..1");
  }
  if (time_weight < 0 || time_weight > 5) {
    return Status::InvalidParameter("--time-weight must be in 0..5");
  }
  if (neighbour_weight < 0 || neighbour_weight > 1) {
    return Status::InvalidParameter("--neighbour-weight must be in 0..1");
  }
  if (question_factor < 0 || question_factor > 1) {
    return Status::InvalidParameter("--question-factor must be in 0..1");
  }
  if (reply_weight < 0 || reply_weight > 1) {
    return Status::InvalidParameter("--reply-weight must be in 0..1");
  }
  if (extractor != "rules" && extractor != "llm") {
    return Status::InvalidParameter("--extractor must be rules or llm");
  }
  if (extractor == "llm" && (llm_url.empty() || llm_model.empty())) {
    return Status::InvalidParameter("--extractor llm needs --llm-url and --llm-model");
  }
  if (llm_timeout_ms < 100 || llm_timeout_ms > 600000) {
    return Status::InvalidParameter("--llm-timeout-ms must be 100-600000");
  }
  if (llm_retries < 0 || llm_retries > 10)
    return Status::InvalidParameter("--llm-retries must be 0-10");
  if (rerank != "none" && rerank != "llm")
    return Status::InvalidParameter("--rerank must be none or llm");
  if (rerank == "llm" && (llm_url.empty() || llm_model.empty())) {
    return Status::InvalidParameter("--rerank llm needs --llm-url and --llm-model");
  }
  if (rerank_candidates < 2 || rerank_candidates > 100) {
    return Status::InvalidParameter("--rerank-candidates must be 2-100");
  }
  if (rerank_timeout_ms < 100 || rerank_timeout_ms > 600000) {
    return Status::InvalidParameter("--rerank-timeout-ms must be 100-600000");
  }
  if (event_workers < 1 || event_workers > 64) {
    return Status::InvalidParameter("--event-workers must be 1-64");
  }
  // --- Skills ---
  if (skill_max_files < 1 || skill_max_files > 100000) {
    return Status::InvalidParameter("--skill-max-files must be 1-100000");
  }
  // The request body limit applies on its own; this one bounds the archive and its content.
  if (skill_max_bytes < 1024 || skill_max_bytes > (4ull << 30)) {
    return Status::InvalidParameter("--skill-max-bytes must be between 1024 and 4294967296");
  }
  if (skill_workers < 1 || skill_workers > 64)
    return Status::InvalidParameter("--skill-workers must be 1-64");
  // --- Several nodes ---
  if (!store_url.empty() && store_url.rfind("postgresql://", 0) != 0 &&
      store_url.rfind("postgres://", 0) != 0) {
    return Status::InvalidParameter("--store-url must start with postgresql:// or postgres://");
  }
  if (store_connections < 1 || store_connections > 256) {
    return Status::InvalidParameter("--store-connections must be 1-256");
  }
  if (job_lease_ms < 1000 || job_lease_ms > 3600000) {
    return Status::InvalidParameter("--job-lease-ms must be 1000-3600000");
  }
  if (job_poll_ms < 100 || job_poll_ms > job_lease_ms) {
    return Status::InvalidParameter("--job-poll-ms must be between 100 and --job-lease-ms");
  }
  // --- Knowledge bases ---
  if (kb_chunk_size < 100 || kb_chunk_size > 100000) {
    return Status::InvalidParameter("--kb-chunk-size must be 100-100000");
  }
  if (kb_chunk_overlap < 0 || kb_chunk_overlap > kb_chunk_size / 2) {
    return Status::InvalidParameter("--kb-chunk-overlap must be 0 to half of --kb-chunk-size");
  }
  if (kb_workers < 1 || kb_workers > 64)
    return Status::InvalidParameter("--kb-workers must be 1-64");
  if (kb_max_doc_bytes < 1024)
    return Status::InvalidParameter("--kb-max-doc-bytes must be at least 1024");
  if (kb_pdf_timeout_ms < 100 || kb_pdf_timeout_ms > 600000) {
    return Status::InvalidParameter("--kb-pdf-timeout-ms must be 100-600000");
  }
  if (!oss_endpoint.empty()) {
    if (oss_endpoint.rfind("http://", 0) != 0 && oss_endpoint.rfind("https://", 0) != 0) {
      return Status::InvalidParameter("--oss-endpoint must be an http:// or https:// URL");
    }
    if (oss_access_key.empty() || oss_secret_key.empty()) {
      return Status::InvalidParameter("--oss-endpoint needs --oss-access-key and --oss-secret-key");
    }
  }
  // --- end Knowledge bases ---
  if (ocr_timeout_ms < 100 || ocr_timeout_ms > 600000) {
    return Status::InvalidParameter("--ocr-timeout-ms must be 100-600000");
  }
  return Status::Ok();
}

}  // namespace engram
