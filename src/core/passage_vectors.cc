#include "core/passage_vectors.h"

namespace engram {

Result<std::vector<std::vector<float>>> EmbedPassages(const Embedder& embedder,
                                                      const std::vector<std::string>& texts) {
  std::vector<std::string> passages;
  std::vector<size_t> counts;
  counts.reserve(texts.size());
  for (const auto& text : texts) {
    const std::vector<PassageSpan> spans = SplitPassages(text);
    counts.push_back(spans.size());
    if (spans.size() == 1) {
      passages.push_back(text);
      continue;
    }
    const std::string title = MessageTitle(text);
    for (const auto& s : spans) passages.push_back(PassageEmbeddingText(text, title, s));
  }
  auto vectors = embedder.EmbedBatch(passages);
  if (!vectors.ok()) return vectors.status();
  if (vectors->size() != passages.size()) {
    return Status::Internal("the model returned " + std::to_string(vectors->size()) +
                            " vectors for " + std::to_string(passages.size()) + " passages");
  }
  std::vector<std::vector<float>> out;
  out.reserve(texts.size());
  size_t at = 0;
  for (const size_t n : counts) {
    if (n == 1) {
      out.push_back(std::move((*vectors)[at++]));
      continue;
    }
    std::vector<float> joined;
    for (size_t i = 0; i < n; ++i, ++at) {
      joined.insert(joined.end(), (*vectors)[at].begin(), (*vectors)[at].end());
    }
    out.push_back(std::move(joined));
  }
  return out;
}

std::span<const float> PassageVector(std::span<const float> stored, size_t passages, size_t i,
                                     size_t dim) {
  if (dim == 0 || i >= passages || stored.size() != passages * dim) return {};
  return stored.subspan(i * dim, dim);
}

}  // namespace engram
