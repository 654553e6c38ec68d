// CachingEmbedder: an Embedder decorator that keeps the vectors of recent search queries.
//
// A search embeds its query on the request path (~2 ms of model time per short text here, most
// of a hybrid search's CPU). Applications often send the same query again (a retried request, a
// chat turn re-asking, several scopes searched with one question); those get the vector from a
// bounded LRU instead of the model. Only EmbedQuery is cached: stored texts (EmbedBatch) rarely
// repeat and would only push queries out. Keys are the model id and the exact query text: the
// model is case- and whitespace-sensitive, so any further normalisation would hand a query the
// vector of a different text and change its ranking. Entries are held in memory only and never
// logged; each costs dimension() floats plus its text (~2.1 KiB for a 512-d model).
//
// Thread-safety: safe for concurrent use (one mutex around the LRU; the model runs outside it, so
// two concurrent misses of one text both embed it). Does not own the wrapped embedder.
#pragma once

#include <atomic>
#include <cstdint>
#include <list>
#include <string>
#include <unordered_map>
#include <vector>

#include "common/mutex.h"
#include "embed/embedder.h"

namespace engram {

struct QueryEmbeddingCacheOptions {
  // Queries kept; 0 turns the cache off (every EmbedQuery runs the model).
  size_t max_entries = 1024;
};

class CachingEmbedder final : public Embedder {
 public:
  CachingEmbedder(const Embedder* inner, QueryEmbeddingCacheOptions options = {});

  const std::string& model_id() const override { return inner_->model_id(); }
  int dimension() const override { return inner_->dimension(); }
  // Not cached: passed to the wrapped embedder.
  Result<std::vector<std::vector<float>>> EmbedBatch(
      const std::vector<std::string>& texts) const override;
  // Cached by (model id, text); failures are not cached.
  Result<std::vector<float>> EmbedQuery(const std::string& text) const override;

  uint64_t hits() const { return hits_.load(std::memory_order_relaxed); }
  uint64_t misses() const { return misses_.load(std::memory_order_relaxed); }
  size_t size() const;

 private:
  struct Entry {
    std::string key;
    std::vector<float> vector;
  };

  const Embedder* inner_;
  const QueryEmbeddingCacheOptions options_;
  mutable Mutex mu_;
  mutable std::list<Entry> lru_ GUARDED_BY(mu_);  // most recently used first
  // Points into lru_; the string_view keys are the entries' own keys.
  mutable std::unordered_map<std::string_view, std::list<Entry>::iterator> index_ GUARDED_BY(mu_);
  mutable std::atomic<uint64_t> hits_{0};
  mutable std::atomic<uint64_t> misses_{0};
};

}  // namespace engram
