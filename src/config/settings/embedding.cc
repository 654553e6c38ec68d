// The text embedder: the built-in model (its arithmetic and kernels), an OpenAI-compatible
// endpoint, or none; the query vector cache.
#include "config/settings/settings.h"

namespace engram {

std::vector<OptionSpec> EmbeddingSettings() {
  // clang-format off
  return {
      {.name = "embedder", .field = &ServeOptions::embedder, .help = "embeddings: builtin (Universal Sentence Encoder lite), openai (an OpenAI-compatible endpoint) or none (BM25 only)", .choices = {"builtin", "openai", "none"}},
      {.name = "embed-precision", .field = &ServeOptions::embed_precision, .help = "built-in model arithmetic: auto (int8 where it is faster than fp32: AVX512_VNNI, AVX-VNNI, or AVX2 without AVX-512; else fp32), fp32 (reference-exact), bf16 (AVX512_BF16), int8 (any CPU; the same vectors on each)", .choices = {"auto", "fp32", "bf16", "int8"}},
      {.name = "kernels", .field = &ServeOptions::kernels, .help = "instruction sets of the built-in model's kernels and the int8 vector scan: auto (the widest this CPU runs) or a family to force, for tests and comparisons (a family the CPU lacks stops the start)", .tier = OptionTier::kAdvanced, .choices = {"auto", "scalar", "avx2", "avxvnni", "avx512", "neon"}},
      {.name = "model-dir", .field = &ServeOptions::model_dir, .help = "built-in model directory (default: share/engram/model beside the installed binary, or third_party/model/package/dist in a build tree)"},
      {.name = "embed-url", .field = &ServeOptions::embed_url, .help = "OpenAI-compatible base URL for --embedder openai, e.g. http://host:8000/v1"},
      {.name = "embed-model", .field = &ServeOptions::embed_model, .help = "embedding model name for --embedder openai"},
      {.name = "embed-api-key", .field = &ServeOptions::embed_api_key, .help = "API key of the embedding endpoint"},
      {.name = "embed-dimensions", .field = &ServeOptions::embed_dimensions, .help = "vector size to request (0: whatever the endpoint returns)", .tier = OptionTier::kAdvanced, .min = 0, .max = 65536},
      {.name = "embed-timeout-ms", .field = &ServeOptions::embed_timeout_ms, .help = "embedding request timeout", .tier = OptionTier::kAdvanced, .min = 1},
      {.name = "embed-retries", .field = &ServeOptions::embed_retries, .help = "embedding retries on errors, 429 and 5xx", .tier = OptionTier::kAdvanced, .min = 0, .max = 10},
      {.name = "query-cache-entries", .field = &ServeOptions::query_cache_entries, .help = "recent search queries whose vectors are kept in memory (LRU by model and exact query text, ~2 KiB each); a repeated query skips the model (0: off)", .tier = OptionTier::kAdvanced, .min = 0, .max = 1000000},
  };
  // clang-format on
}

}  // namespace engram
