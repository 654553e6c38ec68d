// OpenAiEmbedder: an Embedder backed by a remote OpenAI-compatible POST {base_url}/embeddings
// endpoint (OpenAI, vLLM, Text Embeddings Inference, Ollama, LiteLLM, ...).
//
// Request:  {"model": M, "input": [texts...], "encoding_format": "float"[, "dimensions": D]}
// Response: {"data": [{"index": i, "embedding": [floats...]}, ...]}; vectors are placed by "index",
//           not by position, because the API does not promise any order.
//
// Behaviour worth knowing:
//  - Batches larger than max_batch_texts / max_batch_bytes are split into several sequential
//    requests; the result is still one vector per input text, in input order. A single text larger
//    than max_batch_bytes is sent alone (never cut: the Embedder contract forbids dropping a tail).
//    Texts longer than the model's context are the server's business: OpenAI answers 400
//    (→ kInvalidParameter), others truncate.
//  - Empty texts are sent as a single space: OpenAI rejects "" with 400, and " " embeds to the
//    same "no content" point on every server we know of.
//  - Invalid UTF-8 in a text is replaced by U+FFFD before sending (JSON cannot carry it).
//  - Every returned vector is L2-normalised here; servers differ on whether they normalise.
//  - Retries: connection failures, timeouts, 429 and 5xx are retried up to max_retries times with
//    exponential backoff and jitter (a 429/503 Retry-After of up to 30 s is honoured). Worst-case
//    latency of one request is therefore about (max_retries + 1) * request_timeout + backoff.
//    Other 4xx are not retried: 400/413/422 → kInvalidParameter (the input is at fault), anything
//    else (401, 403, 404, ...) → kUnavailable (the endpoint is misconfigured). Errors carry an
//    excerpt of the server's message (≤ 200 bytes, API key masked). Texts and the key are never
//    logged or put into a Status.
//  - Redirects are not followed (they could forward the Authorization header elsewhere).
//
// Thread-safety: EmbedBatch, model_id and dimension are safe to call concurrently. Requests run in
// parallel through net/json_post_client.h (pooled libcurl handles, keep-alive, TLS session reuse).
// Ownership: callers own returned vectors.
#pragma once

#include <chrono>
#include <cstddef>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "embed/embedder.h"
#include "net/json_post_client.h"

namespace engram {

struct OpenAiEmbedderOptions {
  // Base of the API, e.g. "http://127.0.0.1:8000/v1" or "https://api.openai.com/v1"; the client
  // POSTs to base_url + "/embeddings" (a trailing '/' is tolerated). Must be http:// or https://.
  std::string base_url;
  // Sent as "model"; must be non-empty.
  std::string model;
  // Sent as "Authorization: Bearer <key>" when non-empty.
  std::string api_key;
  // > 0: sent as "dimensions" (models with Matryoshka truncation) and every vector is checked to
  // have this length. 0: Create sends one probe request to learn the length (no "dimensions" sent).
  int dimensions = 0;
  // Upper bounds per request; larger EmbedBatch calls are split. Both must be >= 1.
  size_t max_batch_texts = 64;
  size_t max_batch_bytes = 256 << 10;  // sum of text sizes in one request
  std::chrono::milliseconds connect_timeout{2000};
  std::chrono::milliseconds request_timeout{30000};  // whole request, connect included
  // Retries after the first attempt on connection errors, timeouts, 429 and 5xx; >= 0. The n-th
  // retry waits retry_base * 2^(n-1), jittered to between half and all of that.
  int max_retries = 3;
  std::chrono::milliseconds retry_base{200};
  // Decoded response bodies beyond this abort the request (kUnavailable, not retried).
  size_t max_response_bytes = 64 << 20;
};

class OpenAiEmbedder final : public Embedder {
 public:
  // Validates options (kInvalidParameter with a message naming the option). When
  // options.dimensions == 0, sends one probe request to learn the dimension; if that fails, returns
  // its error (kUnavailable when the server cannot be reached or answers nonsense).
  static Result<std::unique_ptr<OpenAiEmbedder>> Create(OpenAiEmbedderOptions options);

  ~OpenAiEmbedder() override;
  OpenAiEmbedder(const OpenAiEmbedder&) = delete;
  OpenAiEmbedder& operator=(const OpenAiEmbedder&) = delete;

  // "openai:<model>@<dimensions>", so stored vectors notice a change of model or dimension.
  const std::string& model_id() const override { return model_id_; }
  int dimension() const override { return dimension_; }

  // Thread-safe. One L2-normalised vector per text, in input order. Errors: kInvalidParameter
  // (server rejected the input with 400/413/422), kUnavailable (unreachable, timed out, retries
  // exhausted, other 4xx, malformed or inconsistent response: wrong count, missing or duplicate
  // index, wrong dimension, non-finite or zero vector).
  Result<std::vector<std::vector<float>>> EmbedBatch(
      const std::vector<std::string>& texts) const override;

 private:
  OpenAiEmbedder(OpenAiEmbedderOptions options, std::unique_ptr<JsonPostClient> http);

  // One request for texts[begin, end) with retries; writes vectors into out[begin, end).
  Status EmbedChunk(const std::vector<std::string>& texts, size_t begin, size_t end,
                    int expected_dimension, std::vector<std::vector<float>>& out) const;

  const OpenAiEmbedderOptions options_;
  const std::unique_ptr<JsonPostClient> http_;
  std::string model_id_;  // set once in Create, then read-only
  int dimension_ = 0;     // set once in Create, then read-only
};

}  // namespace engram
