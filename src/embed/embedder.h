// Embedder: turns texts into dense vectors for the vector index.
//
// Implementations: the built-in Universal Sentence Encoder lite (use_lite.h) and, later, a remote
// OpenAI-compatible endpoint. Every stored vector records model_id() so vectors from different
// models are never compared with each other.
//
// Thread-safety: implementations must make every const method safe to call concurrently.
// Ownership: callers own the returned vectors.
#pragma once

#include <string>
#include <vector>

#include "common/status.h"

namespace engram {

class Embedder {
 public:
  virtual ~Embedder() = default;

  // Identifies model and version, e.g. "use-lite-512@0.2.0"; stable for the embedder's life.
  virtual const std::string& model_id() const = 0;
  // Length of every returned vector.
  virtual int dimension() const = 0;

  // Thread-safe. Returns one L2-normalised vector per text, same order. Texts of any length are
  // accepted; how long texts are handled is up to the implementation but must not silently drop
  // the tail.
  virtual Result<std::vector<std::vector<float>>> EmbedBatch(
      const std::vector<std::string>& texts) const = 0;

  // Convenience for one text.
  Result<std::vector<float>> Embed(const std::string& text) const;

  // Thread-safe. One search query's vector: Embed by default; a decorator may answer repeated
  // queries from a cache (query_embedding_cache.h). Stored texts go through Embed / EmbedBatch.
  virtual Result<std::vector<float>> EmbedQuery(const std::string& text) const;
};

}  // namespace engram
