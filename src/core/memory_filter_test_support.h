// Test-only helpers shared by the MemoryFilter tests (memory_filter_test.cc,
// memory_filter_match_test.cc, memory_filter_property_test.cc): parsing a filter from JSON text,
// and Doc, a memory that owns what the FilterDoc it hands to Matches() views.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "common/time_util.h"
#include "core/memory_filter.h"

namespace engram::testing {

using json = nlohmann::json;

inline Result<MemoryFilter> Parse(std::string_view text, const FilterLimits& limits = {}) {
  return MemoryFilter::Parse(json::parse(text), "filters", limits);
}

inline MemoryFilter MustParse(std::string_view text) {
  auto parsed = Parse(text);
  if (!parsed.ok()) {
    ADD_FAILURE() << text << ": " << parsed.status().message();
    return MemoryFilter();
  }
  return std::move(parsed).value();
}

inline int64_t Micros(std::string_view iso) { return ParseIsoToMicros(iso).value(); }

// Owns what a FilterDoc views.
struct Doc {
  std::string id = "m-1";
  std::string user_id = "alice";
  std::string agent_id;
  std::string run_id;
  std::string app_id;
  std::string session_id;
  std::string text = "The quick brown fox";
  std::vector<std::string> categories;
  int64_t created_at_us = 0;
  int64_t updated_at_us = 0;
  json metadata = json::object();
  bool null_metadata = false;

  FilterDoc View() const {
    return {.id = id,
            .user_id = user_id,
            .agent_id = agent_id,
            .run_id = run_id,
            .app_id = app_id,
            .session_id = session_id,
            .text = text,
            .categories = categories,
            .created_at_us = created_at_us,
            .updated_at_us = updated_at_us,
            .metadata = null_metadata ? nullptr : &metadata};
  }
};

}  // namespace engram::testing
