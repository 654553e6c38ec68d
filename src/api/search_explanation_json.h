// The `explain` object of a search result (docs/retrieval.md#explained-search): the fusion's
// parts per retriever, the score after the domain's steps, the rank before a reranker.
//
// Thread-safety: a pure function.
#pragma once

#include <nlohmann/json.hpp>

#include "core/search_explanation.h"

namespace engram {

nlohmann::json ExplanationJson(const SearchExplanation& explanation);

}  // namespace engram
