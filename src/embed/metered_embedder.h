// MeteredEmbedder: an Embedder decorator that counts the wrapped model's work, for /metrics.
//
// It sits right above the model (below BatchingEmbedder and beside the vector queue, which calls
// the model directly), so every figure is a real model pass: batches are EmbedBatch calls that
// reached the model, texts the texts in them, seconds the wall time spent inside them. Work is
// split by lane: calls from request threads (a search's query) and from background threads
// (ThisThreadIsBackground: the vector queue, memory event and knowledge-base workers). Model
// seconds over (wall seconds x cores) is the share of the machine the model used; texts over
// batches is how well short writes share passes. For a remote endpoint the seconds are time
// waiting for its answers, not local CPU.
//
// Thread-safety: safe for concurrent use (relaxed atomic counters). Does not own the wrapped
// embedder.
#pragma once

#include <atomic>
#include <cstdint>
#include <string>
#include <vector>

#include "embed/embedder.h"

namespace engram {

enum class EmbedLane { kRequest = 0, kBackground = 1 };

// Totals since start for one lane; failed calls are counted too (the model did run).
struct EmbedLaneUsage {
  uint64_t batches = 0;
  uint64_t texts = 0;
  uint64_t nanos = 0;  // wall time inside the wrapped model
};

class MeteredEmbedder final : public Embedder {
 public:
  explicit MeteredEmbedder(const Embedder* inner);

  const std::string& model_id() const override { return inner_->model_id(); }
  int dimension() const override { return inner_->dimension(); }
  Result<std::vector<std::vector<float>>> EmbedBatch(
      const std::vector<std::string>& texts) const override;
  // Passed to the wrapped embedder's own EmbedQuery (counted as a batch of one text).
  Result<std::vector<float>> EmbedQuery(const std::string& text) const override;

  EmbedLaneUsage usage(EmbedLane lane) const;

 private:
  struct Counters {
    std::atomic<uint64_t> batches{0};
    std::atomic<uint64_t> texts{0};
    std::atomic<uint64_t> nanos{0};
  };
  void Count(size_t texts, uint64_t nanos) const;

  const Embedder* inner_;
  mutable Counters lanes_[2];  // indexed by EmbedLane
};

}  // namespace engram
