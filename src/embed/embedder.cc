#include "embed/embedder.h"

#include <utility>

namespace engram {

Result<std::vector<float>> Embedder::Embed(const std::string& text) const {
  Result<std::vector<std::vector<float>>> batch = EmbedBatch({text});
  if (!batch.ok()) return batch.status();
  if (batch->size() != 1) return Status::Internal("embedder returned a wrong number of vectors");
  return std::move(batch->front());
}

Result<std::vector<float>> Embedder::EmbedQuery(const std::string& text) const {
  return Embed(text);
}

}  // namespace engram
