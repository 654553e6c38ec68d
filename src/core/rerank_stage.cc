#include "core/rerank_stage.h"

#include <spdlog/spdlog.h>

#include <chrono>

namespace engram {

bool RerankStage::Order(const std::string& question, const std::vector<std::string_view>& texts,
                        std::vector<size_t>* order) {
  const auto start = std::chrono::steady_clock::now();
  auto result = reranker_->Rerank(question, texts);
  const double ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  calls_.fetch_add(1);
  if (!result.ok()) {
    failures_.fetch_add(1);
    // The status may quote the endpoint's error message; only its code is logged.
    spdlog::warn("{}: rerank failed after {:.0f} ms ({}); answered in its own order", name_, ms,
                 ApiCodeOf(result.status().code()));
    return false;
  }
  spdlog::debug("{}: reranked {} results in {:.0f} ms ({} ranked)", name_, texts.size(), ms,
                result->size());
  *order = std::move(*result);
  return true;
}

}  // namespace engram
