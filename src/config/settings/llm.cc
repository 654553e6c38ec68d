// The OpenAI-compatible chat endpoint the LLM extractors and the reranker use.
#include "config/settings/settings.h"

namespace engram {

std::vector<OptionSpec> LlmSettings() {
  // clang-format off
  return {
      {.name = "llm-url", .field = &ServeOptions::llm_url, .help = "OpenAI-compatible base URL for --extractor llm and --rerank llm, e.g. http://127.0.0.1:11434/v1"},
      {.name = "llm-model", .field = &ServeOptions::llm_model, .help = "chat model name"},
      {.name = "llm-api-key", .field = &ServeOptions::llm_api_key, .help = "API key of the chat endpoint"},
      {.name = "llm-timeout-ms", .field = &ServeOptions::llm_timeout_ms, .help = "chat request timeout", .tier = OptionTier::kAdvanced, .min = 100, .max = 600000},
      {.name = "llm-retries", .field = &ServeOptions::llm_retries, .help = "chat retries on errors, 429 and 5xx", .tier = OptionTier::kAdvanced, .min = 0, .max = 10},
  };
  // clang-format on
}

}  // namespace engram
