// Fuzz target for everything that parses untrusted request bytes: JSON object parsing with the
// depth guard, Leaderboard add/search validation (ContentParts, base64 images, magic bytes), memory
// add/search/update validation with the filter grammar, the mem0-compatible API's bodies, query
// strings, the ISO 8601 parser, base64,
// the text analyzer, the query date parser, the named-entity finder and catalog, and the
// reranker's reading of a model's answer. Any
// input must yield a value or a clean Status — never a crash, hang, sanitizer report or exception.
//
// Built two ways (tests/fuzz/CMakeLists.txt): as a libFuzzer binary with clang
// (-DENGRAM_FUZZ=ON), and always as `fuzz_smoke_test`, a ctest that feeds the target a seed corpus
// and deterministic mutations of it.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "api/json_input.h"
#include "api/leaderboard_api.h"
#include "api/mem0/mem0_requests.h"
#include "api/memory_api.h"
#include "api/query_params.h"
#include "common/codec.h"
#include "common/time_util.h"
#include "extract/llm_reranker.h"
#include "index/analyzer.h"
#include "index/entity_catalog.h"
#include "index/query_dates.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view input(reinterpret_cast<const char*>(data), size);
  static const engram::LeaderboardApiLimits limits;
  (void)engram::ParseJsonObject(input);
  (void)engram::ParseLeaderboardAdd(input, limits);
  (void)engram::ParseLeaderboardSearch(input, limits);
  static const engram::MemoryApiLimits memory_limits;
  (void)engram::ParseMemoryAdd(input, "default", memory_limits);
  (void)engram::ParseMemorySearch(input, "default", memory_limits);
  (void)engram::ParseMemoryUpdate(input, "default", "m-1", memory_limits);
  if (auto body = engram::ParseJsonObject(input); body.ok()) {
    (void)engram::ParseMem0Add(*body, "default", memory_limits, true);
    (void)engram::ParseMem0Search(*body, "default", memory_limits, true);
    (void)engram::ParseMem0ListBody(*body, memory_limits);
    (void)engram::ParseMem0Update(*body, "default", "m-1", memory_limits);
    (void)engram::ParseMem0Batch(*body, true, 1000, memory_limits);
    (void)engram::ParseMem0Feedback(*body, memory_limits);
  }
  (void)engram::ParseQueryString(input.substr(0, 4096));
  (void)engram::ParseIsoToMicros(input.substr(0, 64));
  (void)engram::Base64Decode(input, 1 << 20);
  (void)engram::IsValidUtf8(input);
  static const engram::Analyzer analyzer;
  (void)analyzer.Analyze(input.substr(0, 4096));
  (void)engram::ParseQueryDates(input.substr(0, 4096));
  (void)engram::ParseQueryDates(input.substr(0, 4096), /*whole_years=*/true);
  {
    // Each line a text of one conversation: mentions, then the catalog's merging over them.
    engram::EntityCatalog catalog;
    std::string_view rest = input.substr(0, 8192);
    for (int64_t t = 0; !rest.empty(); ++t) {
      const size_t eol = rest.find('\n');
      catalog.Add(engram::FindEntityMentions(rest.substr(0, eol)), t, t % 2 ? "a" : "b");
      rest = eol == std::string_view::npos ? std::string_view() : rest.substr(eol + 1);
    }
    (void)catalog.Entities();
  }
  (void)engram::LlmReranker::ParseAnswer(std::string(input.substr(0, 4096)), 30);
  return 0;
}
