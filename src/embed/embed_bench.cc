// Benchmarks for the built-in embedder. Run from anywhere with
//   ENGRAM_SOURCE_DIR=/path/to/repo ./embed_bench     (or ENGRAM_MODEL_DIR=.../package/dist)
// The *Avx2 variants force the AVX2 kernels, for comparison with CPUs without AVX-512; *Avx2Int8
// and *AvxVnniInt8 the int8 products of CPUs without AVX512_VNNI.
#include <benchmark/benchmark.h>

#include <cstdlib>
#include <iostream>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "embed/simd_kernels.h"
#include "embed/use_lite.h"

namespace engram {
namespace {

std::string ModelDir() {
  if (const char* d = std::getenv("ENGRAM_MODEL_DIR")) return d;
  if (const char* root = std::getenv("ENGRAM_SOURCE_DIR")) {
    return std::string(root) + "/third_party/model/package/dist";
  }
  return "third_party/model/package/dist";
}

UseLiteEmbedder* LoadModel(const KernelTable* kernels) {
  UseLiteOptions options;
  options.kernels = kernels;
  auto loaded = UseLiteEmbedder::Load(ModelDir(), options);
  if (!loaded.ok()) {
    std::cerr << "cannot load model from " << ModelDir() << ": " << loaded.status().ToString()
              << "\n";
    return nullptr;
  }
  return std::move(loaded).value().release();  // lives for the process
}

// The model on the fastest kernels this CPU has.
UseLiteEmbedder* Model() {
  static UseLiteEmbedder* model = LoadModel(nullptr);
  return model;
}

// The model forced onto the AVX2 kernels (nullptr when the CPU has no AVX2).
UseLiteEmbedder* Avx2Model() {
  static UseLiteEmbedder* model = Avx2Kernels() != nullptr ? LoadModel(Avx2Kernels()) : nullptr;
  return model;
}

// The model with bfloat16 products (nullptr when the CPU has no AVX512_BF16).
UseLiteEmbedder* Bf16Model() {
  static UseLiteEmbedder* model =
      Avx512Bf16Kernels() != nullptr ? LoadModel(Avx512Bf16Kernels()) : nullptr;
  return model;
}

// The model with int8 products (nullptr when the CPU has no AVX512_VNNI).
UseLiteEmbedder* Int8Model() {
  static UseLiteEmbedder* model =
      Avx512Int8Kernels() != nullptr ? LoadModel(Avx512Int8Kernels()) : nullptr;
  return model;
}

// The model with int8 products on AVX2 (nullptr when the CPU has no AVX2).
UseLiteEmbedder* Avx2Int8Model() {
  static UseLiteEmbedder* model =
      Avx2Int8Kernels() != nullptr ? LoadModel(Avx2Int8Kernels()) : nullptr;
  return model;
}

// The model with int8 products on AVX-VNNI (nullptr when the CPU has no AVX-VNNI).
UseLiteEmbedder* AvxVnniInt8Model() {
  static UseLiteEmbedder* model =
      AvxVnniInt8Kernels() != nullptr ? LoadModel(AvxVnniInt8Kernels()) : nullptr;
  return model;
}

const std::vector<std::string> kWords = {"the",     "agent",    "remembers", "that",      "our",
                                         "user",    "prefers",  "green",     "tea",       "in",
                                         "morning", "meetings", "about",     "quarterly", "budget",
                                         "plans",   "for",      "new",       "office"};

// The shortest text of varied words with at least `tokens` model tokens (exactly `tokens` for
// these words, which are one token each).
std::string TextWithTokens(int tokens, int seed) {
  std::string text;
  for (int i = 0;; ++i) {
    if (!text.empty()) text += ' ';
    text += kWords[(i * 5 + seed) % kWords.size()];
    if (static_cast<int>(Model()->Tokenize(text).size()) >= tokens) return text;
  }
}

void EmbedTexts(benchmark::State& state, const std::vector<std::string>& texts,
                UseLiteEmbedder* model) {
  if (model == nullptr) {
    state.SkipWithError("model not available");
    return;
  }
  int tokens = 0;
  for (const auto& t : texts) tokens += static_cast<int>(model->Tokenize(t).size());
  for (auto _ : state) {
    auto r = model->EmbedBatch(texts);
    benchmark::DoNotOptimize(r);
  }
  state.counters["tokens"] = tokens;
  state.counters["texts/s"] = benchmark::Counter(static_cast<double>(texts.size()),
                                                 benchmark::Counter::kIsIterationInvariantRate);
}

#define ENGRAM_MODEL_BENCH(name, unit, texts_expr, model_expr)             \
  void name(benchmark::State& state) {                                     \
    if (Model() == nullptr) return state.SkipWithError("model not found"); \
    EmbedTexts(state, texts_expr, model_expr);                             \
  }                                                                        \
  BENCHMARK(name)->Unit(unit)

std::vector<std::string> Batch32() {
  std::vector<std::string> texts;
  for (int i = 0; i < 32; ++i) texts.push_back(TextWithTokens(12 + i % 9, i));
  return texts;
}

ENGRAM_MODEL_BENCH(BM_Sentence16Tokens, benchmark::kMicrosecond, {TextWithTokens(16, 0)}, Model());
ENGRAM_MODEL_BENCH(BM_Window128Tokens, benchmark::kMicrosecond, {TextWithTokens(128, 0)}, Model());
ENGRAM_MODEL_BENCH(BM_Batch32Sentences, benchmark::kMicrosecond, Batch32(), Model());
ENGRAM_MODEL_BENCH(BM_LongText1000Tokens, benchmark::kMillisecond, {TextWithTokens(1000, 3)},
                   Model());
ENGRAM_MODEL_BENCH(BM_Sentence16TokensAvx2, benchmark::kMicrosecond, {TextWithTokens(16, 0)},
                   Avx2Model());
ENGRAM_MODEL_BENCH(BM_Window128TokensAvx2, benchmark::kMicrosecond, {TextWithTokens(128, 0)},
                   Avx2Model());
ENGRAM_MODEL_BENCH(BM_Batch32SentencesAvx2, benchmark::kMicrosecond, Batch32(), Avx2Model());
ENGRAM_MODEL_BENCH(BM_Sentence16TokensBf16, benchmark::kMicrosecond, {TextWithTokens(16, 0)},
                   Bf16Model());
ENGRAM_MODEL_BENCH(BM_Window128TokensBf16, benchmark::kMicrosecond, {TextWithTokens(128, 0)},
                   Bf16Model());
ENGRAM_MODEL_BENCH(BM_Batch32SentencesBf16, benchmark::kMicrosecond, Batch32(), Bf16Model());
ENGRAM_MODEL_BENCH(BM_Sentence16TokensInt8, benchmark::kMicrosecond, {TextWithTokens(16, 0)},
                   Int8Model());
ENGRAM_MODEL_BENCH(BM_Window128TokensInt8, benchmark::kMicrosecond, {TextWithTokens(128, 0)},
                   Int8Model());
ENGRAM_MODEL_BENCH(BM_Batch32SentencesInt8, benchmark::kMicrosecond, Batch32(), Int8Model());
ENGRAM_MODEL_BENCH(BM_Sentence16TokensAvx2Int8, benchmark::kMicrosecond, {TextWithTokens(16, 0)},
                   Avx2Int8Model());
ENGRAM_MODEL_BENCH(BM_Window128TokensAvx2Int8, benchmark::kMicrosecond, {TextWithTokens(128, 0)},
                   Avx2Int8Model());
ENGRAM_MODEL_BENCH(BM_Batch32SentencesAvx2Int8, benchmark::kMicrosecond, Batch32(),
                   Avx2Int8Model());
ENGRAM_MODEL_BENCH(BM_Sentence16TokensAvxVnniInt8, benchmark::kMicrosecond, {TextWithTokens(16, 0)},
                   AvxVnniInt8Model());
ENGRAM_MODEL_BENCH(BM_Window128TokensAvxVnniInt8, benchmark::kMicrosecond, {TextWithTokens(128, 0)},
                   AvxVnniInt8Model());
ENGRAM_MODEL_BENCH(BM_Batch32SentencesAvxVnniInt8, benchmark::kMicrosecond, Batch32(),
                   AvxVnniInt8Model());

void BM_Dot512(benchmark::State& state) {
  std::mt19937 rng(1);
  std::uniform_real_distribution<float> dist(-1, 1);
  std::vector<float> a(512), b(512);
  for (auto& x : a) x = dist(rng);
  for (auto& x : b) x = dist(rng);
  for (auto _ : state) benchmark::DoNotOptimize(Dot(a.data(), b.data(), 512));
}
BENCHMARK(BM_Dot512);

}  // namespace
}  // namespace engram

BENCHMARK_MAIN();
