#include "embed/query_embedding_cache.h"

#include <string_view>
#include <utility>

namespace engram {

CachingEmbedder::CachingEmbedder(const Embedder* inner, QueryEmbeddingCacheOptions options)
    : inner_(inner), options_(options) {}

Result<std::vector<std::vector<float>>> CachingEmbedder::EmbedBatch(
    const std::vector<std::string>& texts) const {
  return inner_->EmbedBatch(texts);
}

Result<std::vector<float>> CachingEmbedder::EmbedQuery(const std::string& text) const {
  if (options_.max_entries == 0) return inner_->EmbedQuery(text);
  // The model id is fixed for the wrapped embedder's life; it is part of the key so that a key
  // never names a vector of another model, should entries ever outlive one.
  std::string key;
  key.reserve(inner_->model_id().size() + 1 + text.size());
  key.append(inner_->model_id()).push_back('\0');
  key.append(text);
  {
    MutexLock lock(&mu_);
    auto it = index_.find(std::string_view(key));
    if (it != index_.end()) {
      lru_.splice(lru_.begin(), lru_, it->second);
      hits_.fetch_add(1, std::memory_order_relaxed);
      return it->second->vector;
    }
  }
  misses_.fetch_add(1, std::memory_order_relaxed);
  auto vector = inner_->EmbedQuery(text);
  if (!vector.ok()) return vector;
  MutexLock lock(&mu_);
  if (index_.find(std::string_view(key)) != index_.end()) return vector;  // a concurrent miss
  lru_.push_front({std::move(key), *vector});
  index_.emplace(std::string_view(lru_.front().key), lru_.begin());
  if (lru_.size() > options_.max_entries) {
    index_.erase(std::string_view(lru_.back().key));
    lru_.pop_back();
  }
  return vector;
}

size_t CachingEmbedder::size() const {
  MutexLock lock(&mu_);
  return lru_.size();
}

}  // namespace engram
