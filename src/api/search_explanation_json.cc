#include "api/search_explanation_json.h"

#include <optional>

namespace engram {

namespace {

// One retriever's entry: what it scored the result (null when it did not return it) and what
// that added to the fused sum.
nlohmann::json RetrieverJson(const char* score_key, const std::optional<float>& score, float part) {
  return {{score_key, score ? nlohmann::json(*score) : nlohmann::json(nullptr)}, {"part", part}};
}

}  // namespace

nlohmann::json ExplanationJson(const SearchExplanation& explanation) {
  nlohmann::json out = nlohmann::json::object();
  if (explanation.fusion) {
    const FusionParts& p = *explanation.fusion;
    nlohmann::json fusion = {{"method", FusionMethodName(explanation.method)},
                             {"score", p.score},
                             {"bm25", RetrieverJson("score", p.lexical, p.lexical_part)},
                             {"vector", RetrieverJson("similarity", p.vector, p.vector_part)}};
    if (p.prior_part != 0) fusion["date_prior"] = {{"closeness", p.prior}, {"part", p.prior_part}};
    if (p.scale != 1) fusion["factor"] = p.scale;
    out["fusion"] = std::move(fusion);
  } else {
    out["fusion"] = nullptr;
  }
  out["ranked_score"] = explanation.ranked_score;
  if (explanation.rank_before_rerank) out["rank_before_rerank"] = *explanation.rank_before_rerank;
  return out;
}

}  // namespace engram
