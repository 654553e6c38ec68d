#include "embed/openai_embedder.h"

#include <algorithm>
#include <cmath>
#include <nlohmann/json.hpp>
#include <utility>

#include "common/json_reader.h"

namespace engram {
namespace {

using json = nlohmann::json;

std::string RequestBody(const OpenAiEmbedderOptions& options, const std::vector<std::string>& texts,
                        size_t begin, size_t end) {
  json input = json::array();
  for (size_t i = begin; i < end; ++i) {
    // OpenAI rejects "" with 400; a space embeds as "no content" everywhere.
    input.push_back(texts[i].empty() ? std::string(" ") : texts[i]);
  }
  json body = {{"model", options.model}, {"input", std::move(input)}, {"encoding_format", "float"}};
  if (options.dimensions > 0) body["dimensions"] = options.dimensions;
  // Invalid UTF-8 in a text would make dump() throw; U+FFFD keeps the rest of the text usable.
  return body.dump(-1, ' ', false, json::error_handler_t::replace);
}

// Parses an embeddings response for `count` texts into out[begin, begin + count), normalised.
// expected_dimension 0 accepts any length as long as all vectors agree.
Status ParseResponse(const std::string& body, size_t count, int expected_dimension, size_t begin,
                     std::vector<std::vector<float>>& out) {
  auto bad = [](const std::string& why) {
    return Status::Unavailable("malformed embeddings response: " + why);
  };
  auto parsed = ReadJson(body, kServiceResponseLimits);
  if (!parsed.ok()) return bad(parsed.status().message());
  const json& j = *parsed;
  if (!j.is_object()) return bad("not a JSON object");
  auto data = j.find("data");
  if (data == j.end() || !data->is_array()) return bad("no \"data\" array");
  if (data->size() != count) {
    return bad("expected " + std::to_string(count) + " embeddings, got " +
               std::to_string(data->size()));
  }
  std::vector<bool> seen(count, false);
  size_t dimension = expected_dimension > 0 ? static_cast<size_t>(expected_dimension) : 0;
  for (const json& item : *data) {
    if (!item.is_object()) return bad("a \"data\" item is not an object");
    auto index_it = item.find("index");
    if (index_it == item.end() || !index_it->is_number_integer()) return bad("missing \"index\"");
    long long index = index_it->get<long long>();
    if (index < 0 || static_cast<size_t>(index) >= count) {
      return bad("\"index\" " + std::to_string(index) + " out of range");
    }
    if (seen[index]) return bad("duplicate \"index\" " + std::to_string(index));
    seen[index] = true;

    auto emb = item.find("embedding");
    if (emb == item.end() || !emb->is_array()) {
      return bad("no \"embedding\" array (a base64 string is not accepted)");
    }
    if (emb->empty()) return bad("empty embedding");
    if (dimension == 0) dimension = emb->size();
    if (emb->size() != dimension) {
      return Status::Unavailable("embedding dimension mismatch: expected " +
                                 std::to_string(dimension) + ", server returned " +
                                 std::to_string(emb->size()));
    }
    // Accumulate in double: a float sum over 3072 squares loses digits that matter for cosine.
    double norm2 = 0;
    for (const json& v : *emb) {
      if (!v.is_number()) return bad("non-numeric embedding value");
      double d = v.get<double>();
      norm2 += d * d;
    }
    if (!std::isfinite(norm2)) return bad("non-finite embedding value");
    if (norm2 == 0) return Status::Unavailable("server returned a zero vector (cannot normalise)");
    double inv = 1.0 / std::sqrt(norm2);
    std::vector<float>& vec = out[begin + index];
    vec.clear();
    vec.reserve(dimension);
    for (const json& v : *emb) vec.push_back(static_cast<float>(v.get<double>() * inv));
  }
  // count items with distinct in-range indexes cover every slot, so `seen` needs no final check.
  return Status::Ok();
}

}  // namespace

OpenAiEmbedder::OpenAiEmbedder(OpenAiEmbedderOptions options, std::unique_ptr<JsonPostClient> http)
    : options_(std::move(options)), http_(std::move(http)) {}

OpenAiEmbedder::~OpenAiEmbedder() = default;

Result<std::unique_ptr<OpenAiEmbedder>> OpenAiEmbedder::Create(OpenAiEmbedderOptions options) {
  auto invalid = [](const std::string& m) {
    return Status::InvalidParameter("openai embedder: " + m);
  };
  ENGRAM_RETURN_IF_ERROR(CheckBaseUrl(options.base_url, "openai embedder: "));
  if (options.model.empty()) return invalid("model must not be empty");
  if (options.dimensions < 0) return invalid("dimensions must be >= 0");
  if (options.max_batch_texts < 1) return invalid("max_batch_texts must be >= 1");
  if (options.max_batch_bytes < 1) return invalid("max_batch_bytes must be >= 1");
  auto http = JsonPostClient::Create({.url = TrimTrailingSlashes(options.base_url) + "/embeddings",
                                      .api_key = options.api_key,
                                      .label = "embedding endpoint",
                                      .connect_timeout = options.connect_timeout,
                                      .request_timeout = options.request_timeout,
                                      .max_retries = options.max_retries,
                                      .retry_base = options.retry_base,
                                      .max_response_bytes = options.max_response_bytes},
                                     "openai embedder: ");
  if (!http.ok()) return http.status();

  // The constructor is private (only Create validates), so make_unique cannot reach it.
  std::unique_ptr<OpenAiEmbedder> embedder(
      new OpenAiEmbedder(std::move(options), std::move(*http)));
  int dimension = embedder->options_.dimensions;
  if (dimension == 0) {
    // Learn the dimension now, so model_id() is right before any vector is stored and a wrong URL
    // or key fails at startup instead of on the first write.
    std::vector<std::string> probe = {"dimension probe"};
    std::vector<std::vector<float>> out(1);
    Status st = embedder->EmbedChunk(probe, 0, 1, /*expected_dimension=*/0, out);
    if (!st.ok()) {
      return Status(st.code(), "openai embedder: dimension probe failed: " + st.message());
    }
    dimension = static_cast<int>(out[0].size());
  }
  embedder->dimension_ = dimension;
  embedder->model_id_ = "openai:" + embedder->options_.model + "@" + std::to_string(dimension);
  return embedder;
}

Result<std::vector<std::vector<float>>> OpenAiEmbedder::EmbedBatch(
    const std::vector<std::string>& texts) const {
  std::vector<std::vector<float>> out(texts.size());
  // Chunks go one after another: parallel requests from one call would just trip rate limits.
  size_t begin = 0;
  while (begin < texts.size()) {
    size_t end = begin;
    size_t bytes = 0;
    while (end < texts.size() && end - begin < options_.max_batch_texts) {
      size_t size = std::max<size_t>(texts[end].size(), 1);
      if (end > begin && bytes + size > options_.max_batch_bytes) break;
      bytes += size;
      ++end;
    }
    ENGRAM_RETURN_IF_ERROR(EmbedChunk(texts, begin, end, dimension_, out));
    begin = end;
  }
  return out;
}

Status OpenAiEmbedder::EmbedChunk(const std::vector<std::string>& texts, size_t begin, size_t end,
                                  int expected_dimension,
                                  std::vector<std::vector<float>>& out) const {
  auto body = http_->Post(RequestBody(options_, texts, begin, end));
  if (!body.ok()) return body.status();
  Status st = ParseResponse(*body, end - begin, expected_dimension, begin, out);
  if (!st.ok()) return Status(st.code(), http_->where() + ": " + st.message());
  return Status::Ok();
}

}  // namespace engram
