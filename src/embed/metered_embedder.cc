#include "embed/metered_embedder.h"

#include <chrono>

#include "common/thread_util.h"

namespace engram {
namespace {

uint64_t NanosSince(std::chrono::steady_clock::time_point start) {
  return static_cast<uint64_t>(
      std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - start)
          .count());
}

}  // namespace

MeteredEmbedder::MeteredEmbedder(const Embedder* inner) : inner_(inner) {}

void MeteredEmbedder::Count(size_t texts, uint64_t nanos) const {
  Counters& c = lanes_[static_cast<int>(ThisThreadIsBackground() ? EmbedLane::kBackground
                                                                 : EmbedLane::kRequest)];
  c.batches.fetch_add(1, std::memory_order_relaxed);
  c.texts.fetch_add(texts, std::memory_order_relaxed);
  c.nanos.fetch_add(nanos, std::memory_order_relaxed);
}

Result<std::vector<std::vector<float>>> MeteredEmbedder::EmbedBatch(
    const std::vector<std::string>& texts) const {
  const auto start = std::chrono::steady_clock::now();
  auto vectors = inner_->EmbedBatch(texts);
  Count(texts.size(), NanosSince(start));
  return vectors;
}

Result<std::vector<float>> MeteredEmbedder::EmbedQuery(const std::string& text) const {
  const auto start = std::chrono::steady_clock::now();
  auto vector = inner_->EmbedQuery(text);
  Count(1, NanosSince(start));
  return vector;
}

EmbedLaneUsage MeteredEmbedder::usage(EmbedLane lane) const {
  const Counters& c = lanes_[static_cast<int>(lane)];
  return {.batches = c.batches.load(std::memory_order_relaxed),
          .texts = c.texts.load(std::memory_order_relaxed),
          .nanos = c.nanos.load(std::memory_order_relaxed)};
}

}  // namespace engram
