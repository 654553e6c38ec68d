#include "config/serve_options.h"

#include <fmt/format.h>

#include "config/option_table.h"

namespace engram {

bool IsLoopbackHost(const std::string& host) {
  return host == "localhost" || host == "::1" || host == "[::1]" || host.rfind("127.", 0) == 0;
}

Status ServeOptions::Validate() {
  // Each value within its own range and choices (config/option_table.h); what follows are the
  // rules that relate settings to each other.
  ENGRAM_RETURN_IF_ERROR(CheckOptionValues(*this));
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
  // Image limits above the body limit are harmless (the body limit answers first), so lowering
  // --max-body-bytes alone stays valid.
  if (max_request_image_bytes < max_image_bytes) {
    return Status::InvalidParameter("--max-request-image-bytes must be at least --max-image-bytes");
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
  if (embedder == "openai" && (embed_url.empty() || embed_model.empty())) {
    return Status::InvalidParameter("--embedder openai needs --embed-url and --embed-model");
  }
  if (retrieval != "bm25" && embedder == "none") {
    return Status::InvalidParameter("--retrieval " + retrieval +
                                    " needs an embedder (--embedder builtin)");
  }
  if (extractor == "llm" && (llm_url.empty() || llm_model.empty())) {
    return Status::InvalidParameter("--extractor llm needs --llm-url and --llm-model");
  }
  if (rerank == "llm" && (llm_url.empty() || llm_model.empty())) {
    return Status::InvalidParameter("--rerank llm needs --llm-url and --llm-model");
  }
  // Several nodes.
  if (!store_url.empty() && store_url.rfind("postgresql://", 0) != 0 &&
      store_url.rfind("postgres://", 0) != 0) {
    return Status::InvalidParameter("--store-url must start with postgresql:// or postgres://");
  }
  if (job_poll_ms > job_lease_ms) {
    return Status::InvalidParameter("--job-poll-ms must be between 100 and --job-lease-ms");
  }
  // Knowledge bases.
  if (kb_chunk_overlap > kb_chunk_size / 2) {
    return Status::InvalidParameter("--kb-chunk-overlap must be 0 to half of --kb-chunk-size");
  }
  if (!oss_endpoint.empty()) {
    if (oss_endpoint.rfind("http://", 0) != 0 && oss_endpoint.rfind("https://", 0) != 0) {
      return Status::InvalidParameter("--oss-endpoint must be an http:// or https:// URL");
    }
    if (oss_access_key.empty() || oss_secret_key.empty()) {
      return Status::InvalidParameter("--oss-endpoint needs --oss-access-key and --oss-secret-key");
    }
  }
  return Status::Ok();
}

}  // namespace engram
