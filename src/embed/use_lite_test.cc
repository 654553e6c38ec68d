#include "embed/use_lite.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "embed/embed_command.h"
#include "embed/simd_kernels.h"

namespace engram {
namespace {

std::string SourceDir() {
  const char* root = std::getenv("ENGRAM_SOURCE_DIR");
  return root == nullptr ? "" : root;
}
std::string ModelDir() { return SourceDir() + "/third_party/model/package/dist"; }
std::string ReferencePath() { return SourceDir() + "/../shared/data/use_lite_reference.json"; }

float Norm(const std::vector<float>& v) {
  double s = 0;
  for (float x : v) s += static_cast<double>(x) * x;
  return static_cast<float>(std::sqrt(s));
}

float CosineOf(const std::vector<float>& a, const std::vector<float>& b) {
  return Cosine(a.data(), b.data(), static_cast<int>(a.size()));
}

// A long text of `words` words: varied sentences, so windows see different content.
std::string LongText(int words) {
  const std::vector<std::string> vocab = {
      "the",   "memory", "server", "stores", "what",      "agents", "learn",
      "about", "users",  "and",    "their",  "projects",  "while",  "trains",
      "leave", "at",     "noon",   "coffee", "tastes",    "bitter", "databases",
      "sync",  "to",     "disk",   "before", "answering", "every",  "request."};
  std::string text;
  for (int i = 0; i < words; ++i) {
    if (i > 0) text += ' ';
    text += vocab[(i * 7 + i / 13) % vocab.size()];
  }
  return text;
}

// The reference runtime's sentences and vectors (ReferencePath, outside the repository); empty
// when the file is absent.
struct Reference {
  std::vector<std::string> sentences;
  std::vector<std::vector<float>> vectors;
};
Reference LoadReference() {
  std::ifstream in(ReferencePath());
  if (!in) return {};
  std::stringstream buffer;
  buffer << in.rdbuf();
  auto ref = nlohmann::json::parse(buffer.str(), nullptr, false);
  if (ref.is_discarded() || !ref.contains("S") || !ref.contains("E")) {
    ADD_FAILURE() << "malformed reference file " << ReferencePath();
    return {};
  }
  return {ref["S"].get<std::vector<std::string>>(),
          ref["E"].get<std::vector<std::vector<float>>>()};
}

class UseLiteTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    if (SourceDir().empty() || !std::filesystem::exists(ModelDir() + "/model.json")) return;
    auto loaded = UseLiteEmbedder::Load(ModelDir());
    ASSERT_TRUE(loaded.ok()) << loaded.status().ToString();
    model_ = std::move(loaded).value().release();
  }
  static void TearDownTestSuite() {
    delete model_;
    model_ = nullptr;
  }
  void SetUp() override {
    if (model_ == nullptr) {
      GTEST_SKIP() << "model package missing (set ENGRAM_SOURCE_DIR; expected " << ModelDir()
                   << ")";
    }
  }
  std::vector<float> EmbedOne(const std::string& text) {
    auto v = model_->Embed(text);
    EXPECT_TRUE(v.ok()) << v.status().ToString();
    return v.ok() ? *v : std::vector<float>(UseLiteEmbedder::kDimension, 0.0f);
  }
  // Embeds the reference sentences with `table` (model id suffix `name`) and expects every vector
  // within `min_cosine` of the reference, and visibly not identical to it.
  void ExpectCloseToReference(const KernelTable* table, const char* name, float min_cosine);

  static UseLiteEmbedder* model_;  // shared: loading takes ~0.1 s and the model is immutable
};
UseLiteEmbedder* UseLiteTest::model_ = nullptr;

TEST_F(UseLiteTest, IdentityAndDimension) {
  EXPECT_EQ(model_->model_id(), "use-lite-512@0.2.0");
  EXPECT_EQ(model_->dimension(), 512);
}

TEST_F(UseLiteTest, MatchesReferenceVectors) {
  const Reference reference = LoadReference();
  if (reference.sentences.empty()) GTEST_SKIP() << "reference vectors missing: " << ReferencePath();
  const auto& sentences = reference.sentences;
  const auto& expected = reference.vectors;
  ASSERT_EQ(sentences.size(), expected.size());

  auto got = model_->EmbedBatch(sentences);
  ASSERT_TRUE(got.ok()) << got.status().ToString();
  float worst = 0;
  for (size_t s = 0; s < sentences.size(); ++s) {
    ASSERT_EQ((*got)[s].size(), expected[s].size());
    for (size_t i = 0; i < expected[s].size(); ++i) {
      worst = std::max(worst, std::fabs((*got)[s][i] - expected[s][i]));
    }
  }
  std::cout << "[ reference ] max abs diff over " << sentences.size() << " sentences: " << worst
            << "\n";
  EXPECT_LE(worst, 1e-5f);
}

// The fallback paths (AVX2 on CPUs without AVX-512, scalar without AVX2) must match the reference
// too, not just agree with each other kernel by kernel.
TEST_F(UseLiteTest, EveryKernelPathMatchesReference) {
  const Reference reference = LoadReference();
  if (reference.sentences.empty()) GTEST_SKIP() << "reference vectors missing: " << ReferencePath();
  const auto& sentences = reference.sentences;
  const auto& expected = reference.vectors;
  for (const KernelTable* table : {&ScalarKernels(), Avx2Kernels(), Avx512Kernels()}) {
    if (table == nullptr) continue;
    UseLiteOptions options;
    options.kernels = table;
    auto model = UseLiteEmbedder::Load(ModelDir(), options);
    ASSERT_TRUE(model.ok()) << model.status().ToString();
    auto got = (*model)->EmbedBatch(sentences);
    ASSERT_TRUE(got.ok());
    float worst = 0;
    for (size_t s = 0; s < sentences.size(); ++s) {
      for (size_t i = 0; i < expected[s].size(); ++i) {
        worst = std::max(worst, std::fabs((*got)[s][i] - expected[s][i]));
      }
    }
    std::cout << "[ reference ] isa " << static_cast<int>(table->isa) << " max abs diff " << worst
              << "\n";
    EXPECT_LE(worst, 1e-5f) << "isa " << static_cast<int>(table->isa);
  }
}

// bfloat16 and int8 products are opt-in and not reference-exact; they must stay close to the
// reference (cosine per sentence) and keep the model id distinct so stored vectors are not mixed.
void UseLiteTest::ExpectCloseToReference(const KernelTable* table, const char* name,
                                         float min_cosine) {
  const Reference reference = LoadReference();
  if (reference.sentences.empty()) GTEST_SKIP() << "reference vectors missing: " << ReferencePath();
  const auto& sentences = reference.sentences;
  const auto& expected = reference.vectors;
  UseLiteOptions options;
  options.kernels = table;
  auto model = UseLiteEmbedder::Load(ModelDir(), options);
  ASSERT_TRUE(model.ok()) << model.status().ToString();
  EXPECT_NE((*model)->model_id(), model_->model_id());
  EXPECT_EQ((*model)->model_id(), model_->model_id() + "+" + name);
  auto got = (*model)->EmbedBatch(sentences);
  ASSERT_TRUE(got.ok());
  float worst_cosine = 1, worst_diff = 0;
  for (size_t s = 0; s < sentences.size(); ++s) {
    worst_cosine = std::min(worst_cosine, CosineOf((*got)[s], expected[s]));
    for (size_t i = 0; i < expected[s].size(); ++i) {
      worst_diff = std::max(worst_diff, std::fabs((*got)[s][i] - expected[s][i]));
    }
  }
  std::cout << "[ reference ] " << name << ": worst cosine " << worst_cosine << ", max abs diff "
            << worst_diff << "\n";
  EXPECT_GE(worst_cosine, min_cosine);
  EXPECT_GT(worst_diff, 1e-5f) << name << " rounding should show (is its path running?)";
}

TEST_F(UseLiteTest, Bf16PathStaysCloseToReference) {
  if (Avx512Bf16Kernels() == nullptr) GTEST_SKIP() << "CPU lacks AVX512_BF16";
  ExpectCloseToReference(Avx512Bf16Kernels(), "bf16", 0.995f);
}

// Every int8 table this CPU runs (the scalar one is the reference the SIMD ones equal product by
// product), under the one "+int8" model id.
TEST_F(UseLiteTest, Int8PathsStayCloseToReference) {
  for (const KernelTable* table : {&ScalarInt8Kernels(), Avx2Int8Kernels(), AvxVnniInt8Kernels(),
                                   Avx512Int8Kernels(), NeonInt8Kernels(), NeonMullInt8Kernels()}) {
    if (table == nullptr) continue;
    SCOPED_TRACE("isa " + std::to_string(static_cast<int>(table->isa)));
    ExpectCloseToReference(table, "int8", 0.99f);
  }
}

// The int8 tables agree with each other far more closely than with float32: only the float
// parts around the products (layer norm, attention) differ in rounding order between them.
TEST_F(UseLiteTest, Int8PathsAgreeWithEachOther) {
  const std::vector<std::string> texts = {"I like coffee", "The train leaves at noon",
                                          LongText(200)};
  std::vector<std::vector<std::vector<float>>> results;
  for (const KernelTable* table : {&ScalarInt8Kernels(), Avx2Int8Kernels(), AvxVnniInt8Kernels(),
                                   Avx512Int8Kernels(), NeonInt8Kernels(), NeonMullInt8Kernels()}) {
    if (table == nullptr) continue;
    UseLiteOptions options;
    options.kernels = table;
    auto model = UseLiteEmbedder::Load(ModelDir(), options);
    ASSERT_TRUE(model.ok()) << model.status().ToString();
    auto got = (*model)->EmbedBatch(texts);
    ASSERT_TRUE(got.ok());
    results.push_back(*got);
  }
  auto fp32 = model_->EmbedBatch(texts);
  ASSERT_TRUE(fp32.ok());
  for (size_t t = 1; t < results.size(); ++t) {
    for (size_t i = 0; i < texts.size(); ++i) {
      const float to_scalar = CosineOf(results[t][i], results[0][i]);
      const float to_fp32 = CosineOf(results[0][i], (*fp32)[i]);
      std::cout << "[ int8 ] table " << t << " text " << i << ": cosine to scalar int8 "
                << to_scalar << ", scalar int8 to fp32 " << to_fp32 << "\n";
      EXPECT_GE(to_scalar, 0.99999f) << "table " << t << " text " << i;
    }
  }
}

TEST_F(UseLiteTest, SemanticSanity) {
  auto coffee = EmbedOne("I like coffee");
  auto espresso = EmbedOne("I enjoy espresso");
  auto train = EmbedOne("The train leaves at noon");
  EXPECT_GT(CosineOf(coffee, espresso), CosineOf(coffee, train));
}

TEST_F(UseLiteTest, OutputsAreUnitNorm) {
  for (const std::string& text : {std::string("Hello"), std::string("a longer sentence here.")}) {
    EXPECT_NEAR(Norm(EmbedOne(text)), 1.0f, 1e-5f);
  }
}

TEST_F(UseLiteTest, EmptyTextHasADefinedVector) {
  auto empty = EmbedOne("");
  EXPECT_NEAR(Norm(empty), 1.0f, 1e-5f);
  EXPECT_EQ(empty, EmbedOne(""));
  auto batch = model_->EmbedBatch({"", "x", ""});
  ASSERT_TRUE(batch.ok());
  EXPECT_EQ((*batch)[0], empty);
  EXPECT_EQ((*batch)[2], empty);
  auto none = model_->EmbedBatch({});
  ASSERT_TRUE(none.ok());
  EXPECT_TRUE(none->empty());
}

TEST_F(UseLiteTest, LongTextUsesAllWindows) {
  const std::string text = LongText(1000);
  const std::vector<int> ids = model_->Tokenize(text);
  ASSERT_GT(ids.size(), 500u);
  auto full = EmbedOne(text);
  EXPECT_NEAR(Norm(full), 1.0f, 1e-5f);
  auto first = model_->EmbedTokensClipped(ids);  // what a truncating embedder would return
  ASSERT_TRUE(first.ok());
  float max_diff = 0;
  for (size_t i = 0; i < full.size(); ++i)
    max_diff = std::max(max_diff, std::fabs(full[i] - (*first)[i]));
  EXPECT_GT(max_diff, 1e-3f);
  // Changing only the end of a long text must change its vector.
  auto changed = EmbedOne(text + " Completely different closing words about volcanoes.");
  EXPECT_LT(CosineOf(full, changed), 0.99999f);
}

TEST_F(UseLiteTest, ShortTextEqualsClippedTokens) {
  const std::string text = "The bus departs at midday";
  auto direct = model_->EmbedTokensClipped(model_->Tokenize(text));
  ASSERT_TRUE(direct.ok());
  EXPECT_EQ(*direct, EmbedOne(text));
}

TEST_F(UseLiteTest, BatchEqualsSingle) {
  std::vector<std::string> texts = {"I like coffee", "",      "The train leaves at noon",
                                    LongText(300),   "short", LongText(40)};
  auto batch = model_->EmbedBatch(texts);
  ASSERT_TRUE(batch.ok());
  ASSERT_EQ(batch->size(), texts.size());
  for (size_t i = 0; i < texts.size(); ++i) {
    auto single = EmbedOne(texts[i]);
    for (size_t j = 0; j < single.size(); ++j) {
      ASSERT_NEAR((*batch)[i][j], single[j], 1e-6f) << "text " << i << " dim " << j;
    }
  }
}

TEST_F(UseLiteTest, ConcurrentCallsAgree) {
  std::vector<std::string> texts = {"I like coffee", "I enjoy espresso", LongText(200), ""};
  auto expected = model_->EmbedBatch(texts);
  ASSERT_TRUE(expected.ok());
  std::vector<std::vector<std::vector<float>>> results(4);
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      for (int round = 0; round < 3; ++round) {
        auto r = model_->EmbedBatch(texts);
        if (r.ok()) results[t] = *r;
      }
    });
  }
  for (auto& th : threads) th.join();
  for (int t = 0; t < 4; ++t) EXPECT_EQ(results[t], *expected) << "thread " << t;
}

TEST_F(UseLiteTest, EmbedCommandPrintsVectorAndSimilarity) {
  std::ostringstream out, err;
  EXPECT_EQ(RunEmbedCommand(ModelDir(), {"I like coffee"}, false, out, err), 0) << err.str();
  auto parsed = nlohmann::json::parse(out.str(), nullptr, false);
  ASSERT_TRUE(parsed.is_array());
  EXPECT_EQ(parsed.size(), 512u);

  std::ostringstream sim, err2;
  EXPECT_EQ(RunEmbedCommand(ModelDir(), {"I like coffee", "I enjoy espresso"}, true, sim, err2), 0);
  const float cos = std::stof(sim.str());
  EXPECT_GT(cos, 0.0f);
  EXPECT_LE(cos, 1.0f);

  std::ostringstream out3, err3;
  EXPECT_EQ(RunEmbedCommand(ModelDir(), {"only one"}, true, out3, err3), 2);
  EXPECT_FALSE(err3.str().empty());
  std::ostringstream out4, err4;
  EXPECT_EQ(RunEmbedCommand("/nonexistent", {"x"}, false, out4, err4), 1);
}

TEST(UseLiteLoadTest, MissingDirectoryIsNotFound) {
  auto loaded = UseLiteEmbedder::Load("/nonexistent/model/dir");
  ASSERT_FALSE(loaded.ok());
  EXPECT_EQ(loaded.status().code(), StatusCode::kNotFound);
}

}  // namespace
}  // namespace engram
