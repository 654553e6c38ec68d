#include "embed/simd_kernels.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <random>
#include <string>
#include <tuple>
#include <vector>

namespace engram {
namespace {

std::vector<float> Random(size_t n, std::mt19937& rng) {
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  std::vector<float> v(n);
  for (float& x : v) x = dist(rng);
  return v;
}

// Sums of k products of values in [-1, 1] reach ~sqrt(k); allow float rounding relative to that.
void ExpectClose(const std::vector<float>& a, const std::vector<float>& b) {
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i) {
    ASSERT_NEAR(a[i], b[i], 1e-5 * (1 + std::fabs(b[i]))) << "index " << i;
  }
}

// Runs every SIMD table this CPU supports against the scalar reference.
class SimdKernelsTest : public ::testing::TestWithParam<KernelIsa> {
 protected:
  void SetUp() override {
    simd_ = GetParam() == KernelIsa::kAvx512 ? Avx512Kernels()
            : GetParam() == KernelIsa::kNeon ? NeonKernels()
                                             : Avx2Kernels();
    if (simd_ == nullptr) GTEST_SKIP() << "CPU lacks this instruction set";
    ASSERT_EQ(simd_->isa, GetParam());
  }
  const KernelTable* simd_ = nullptr;
  const KernelTable& scalar_ = ScalarKernels();
  std::mt19937 rng_{42};
};

TEST_P(SimdKernelsTest, DotMatchesScalar) {
  for (int n : {0, 1, 7, 8, 31, 64, 100, 512, 768, 1001}) {
    auto a = Random(n, rng_), b = Random(n, rng_);
    // Relative, as ExpectClose: summed in another order, a dot product of ~20 (n = 1001) lands
    // a few float steps of 2e-6 away.
    const float expected = scalar_.dot(a.data(), b.data(), n);
    EXPECT_NEAR(simd_->dot(a.data(), b.data(), n), expected, 1e-5 * (1 + std::fabs(expected)))
        << "n=" << n;
  }
}

TEST_P(SimdKernelsTest, GemmMatchesScalarIncludingTails) {
  struct Shape {
    int m, n, k;
  };
  for (Shape s : {Shape{1, 16, 8}, Shape{5, 13, 64}, Shape{7, 37, 128}, Shape{13, 128, 13},
                  Shape{25, 20, 64}, Shape{12, 32, 3}, Shape{128, 128, 64}}) {
    const int lda = s.k + 3, ldb = s.n + 5, ldc = s.n + 2;  // strided, as in attention
    auto a = Random(static_cast<size_t>(s.m) * lda, rng_);
    auto b = Random(static_cast<size_t>(s.k) * ldb, rng_);
    for (bool accumulate : {false, true}) {
      auto c1 = Random(static_cast<size_t>(s.m) * ldc, rng_);
      auto c2 = c1;
      simd_->gemm(s.m, s.n, s.k, a.data(), lda, b.data(), ldb, c1.data(), ldc, accumulate);
      scalar_.gemm(s.m, s.n, s.k, a.data(), lda, b.data(), ldb, c2.data(), ldc, accumulate);
      ExpectClose(c1, c2);
    }
  }
}

TEST_P(SimdKernelsTest, PackedGemmMatchesScalarAndPlainGemm) {
  for (auto [m, k, n] : {std::tuple{1, 256, 512}, std::tuple{13, 512, 1536},
                         std::tuple{40, 1536, 512}, std::tuple{25, 64, 48}}) {
    auto a = Random(static_cast<size_t>(m) * k, rng_);
    auto w = Random(static_cast<size_t>(k) * n, rng_);
    PackedMatrix packed = PackedMatrix::Pack(w.data(), k, n);
    auto c1 = Random(static_cast<size_t>(m) * n, rng_);
    auto c2 = c1, c3 = c1;
    simd_->gemm_packed(m, a.data(), k, packed, c1.data(), n, true);
    scalar_.gemm_packed(m, a.data(), k, packed, c2.data(), n, true);
    scalar_.gemm(m, n, k, a.data(), k, w.data(), n, c3.data(), n, true);
    ExpectClose(c1, c2);
    ExpectClose(c2, c3);
  }
}

TEST(Bf16KernelsTest, PackedGemmIsCloseToFloat32) {
  const KernelTable* bf16 = Avx512Bf16Kernels();
  if (bf16 == nullptr) GTEST_SKIP() << "CPU lacks AVX512_BF16";
  std::mt19937 rng(7);
  // Odd depths pair the last row with zeros; 48 columns = a panel pair and a single panel.
  for (auto [m, k, n] : {std::tuple{1, 256, 512}, std::tuple{13, 512, 1536},
                         std::tuple{40, 1536, 512}, std::tuple{25, 63, 48}}) {
    auto a = Random(static_cast<size_t>(m) * k, rng);
    auto w = Random(static_cast<size_t>(k) * n, rng);
    PackedMatrix packed = PackedMatrix::Pack(w.data(), k, n, /*bf16=*/true);
    for (bool accumulate : {false, true}) {
      auto c1 = Random(static_cast<size_t>(m) * n, rng);
      auto c2 = c1;
      bf16->gemm_packed(m, a.data(), k, packed, c1.data(), n, accumulate);
      ScalarKernels().gemm(m, n, k, a.data(), k, w.data(), n, c2.data(), n, accumulate);
      // bf16 keeps 8 bits of mantissa: each product is off by ~2^-8 relative, and k of them
      // (values in [-1, 1]) add up to an error of ~sqrt(k) * 2^-8 * 0.5.
      double worst = 0;
      for (size_t i = 0; i < c1.size(); ++i)
        worst = std::max(worst, double(std::fabs(c1[i] - c2[i])));
      EXPECT_LT(worst, 0.02 * std::sqrt(double(k))) << m << "x" << k << "x" << n;
      EXPECT_GT(worst, 0.0) << "bf16 rounding should show";  // it really ran the bf16 path
    }
  }
  // Without bf16 panels the float32 kernel runs: exact to float rounding.
  auto a = Random(5 * 64, rng), w = Random(64 * 32, rng);
  PackedMatrix plain = PackedMatrix::Pack(w.data(), 64, 32);
  std::vector<float> c1(5 * 32), c2(5 * 32);
  bf16->gemm_packed(5, a.data(), 64, plain, c1.data(), 32, false);
  ScalarKernels().gemm(5, 32, 64, a.data(), 64, w.data(), 32, c2.data(), 32, false);
  ExpectClose(c1, c2);
}

// Every int8 table this CPU runs, against float32 and against the scalar int8 reference.
class Int8KernelsTest : public ::testing::TestWithParam<KernelIsa> {
 protected:
  void SetUp() override {
    switch (GetParam()) {
      case KernelIsa::kScalarInt8:
        int8_ = &ScalarInt8Kernels();
        break;
      case KernelIsa::kAvx2Int8:
        int8_ = Avx2Int8Kernels();
        break;
      case KernelIsa::kAvxVnniInt8:
        int8_ = AvxVnniInt8Kernels();
        break;
      case KernelIsa::kNeonInt8:
        int8_ = NeonInt8Kernels();
        break;
      case KernelIsa::kNeonInt8Mull:
        int8_ = NeonMullInt8Kernels();
        break;
      default:
        int8_ = Avx512Int8Kernels();
        break;
    }
    if (int8_ == nullptr) GTEST_SKIP() << "CPU lacks this instruction set";
    ASSERT_EQ(int8_->isa, GetParam());
    ASSERT_EQ(int8_->precision, KernelPrecision::kInt8);
  }
  const KernelTable* int8_ = nullptr;
};

TEST_P(Int8KernelsTest, PackedGemmIsCloseToFloat32AndEqualsTheScalarReference) {
  std::mt19937 rng(11);
  // Depths that are not a multiple of 4 pad the last quad (and of 32, the AVX2 quantiser's
  // step); 48 columns = a panel pair and a single panel; 13, 25 and 40 rows leave partial
  // micro-tiles for every tile height.
  for (auto [m, k, n] :
       {std::tuple{1, 256, 512}, std::tuple{13, 512, 1536}, std::tuple{40, 1536, 512},
        std::tuple{25, 63, 48}, std::tuple{3, 2, 16}, std::tuple{7, 100, 32}}) {
    auto a = Random(static_cast<size_t>(m) * k, rng);
    auto w = Random(static_cast<size_t>(k) * n, rng);
    // Large magnitudes in a few places: the codes reach +-127, where vpmaddubsw would
    // saturate without the sign trick.
    a[0] = -4.0f;
    w[0] = 4.0f;
    w[1] = -4.0f;
    PackedMatrix packed = PackedMatrix::Pack(w.data(), k, n);
    packed.AddInt8();
    for (bool accumulate : {false, true}) {
      auto c1 = Random(static_cast<size_t>(m) * n, rng);
      auto c2 = c1, c3 = c1;
      int8_->gemm_packed(m, a.data(), k, packed, c1.data(), n, accumulate);
      ScalarKernels().gemm(m, n, k, a.data(), k, w.data(), n, c2.data(), n, accumulate);
      ScalarInt8Kernels().gemm_packed(m, a.data(), k, packed, c3.data(), n, accumulate);
      // Both operands carry a rounding error of up to half a step (1/254 of their row's or
      // column's largest magnitude, here ~1): k products of values in [-1, 1] add up to an error
      // of ~sqrt(k) * 2 * (1/254) * 0.6.
      double worst = 0;
      for (size_t i = 0; i < c1.size(); ++i)
        worst = std::max(worst, double(std::fabs(c1[i] - c2[i])));
      EXPECT_LT(worst, 0.03 * std::sqrt(double(k)) * 4) << m << "x" << k << "x" << n;
      EXPECT_GT(worst, 0.0) << "int8 rounding should show";  // it really ran the int8 path
      // Exact integer sums and the same scaling: the same floats as the reference, every one.
      for (size_t i = 0; i < c1.size(); ++i) {
        ASSERT_EQ(c1[i], c3[i]) << m << "x" << k << "x" << n << " index " << i;
      }
    }
  }
}

TEST_P(Int8KernelsTest, ValuesOnTheGridAreExact) {
  // Integers in [-127, 127] times one scale per row and per column, including rows and columns
  // of zeros.
  const int m = 4, k = 9, n = 16;
  std::vector<float> a(m * k), w(k * n);
  for (int i = 0; i < m * k; ++i) a[i] = (i / k == 2) ? 0.0f : float((i * 37) % 255 - 127) * 0.5f;
  for (int i = 0; i < k * n; ++i) w[i] = (i % n == 5) ? 0.0f : float((i * 53) % 255 - 127) * 0.25f;
  for (int r = 0; r < m; ++r) a[r * k] = r == 2 ? 0.0f : 63.5f;  // largest magnitude: 127 steps
  for (int col = 0; col < n; ++col) w[col] = col == 5 ? 0.0f : -31.75f;
  PackedMatrix exact = PackedMatrix::Pack(w.data(), k, n);
  exact.AddInt8();
  std::vector<float> c1(m * n), c2(m * n);
  int8_->gemm_packed(m, a.data(), k, exact, c1.data(), n, false);
  ScalarKernels().gemm(m, n, k, a.data(), k, w.data(), n, c2.data(), n, false);
  for (size_t i = 0; i < c1.size(); ++i)
    EXPECT_NEAR(c1[i], c2[i], 1e-3f * (1 + std::fabs(c2[i]))) << i;
}

// Every code at +-127: each pair of byte products is 2 * 127 * 127 = 32258, the most any int16
// step of the AVX2 kernel holds; the sums must still be exact, for every sign combination.
TEST_P(Int8KernelsTest, ExtremeCodesAreExact) {
  const int m = 6, k = 512, n = 32;
  std::vector<float> a(m * k), w(k * n);
  for (int r = 0; r < m; ++r) {
    for (int i = 0; i < k; ++i) a[r * k + i] = r % 2 == 0 ? 1.0f : -1.0f;
  }
  for (int i = 0; i < k; ++i) {
    for (int col = 0; col < n; ++col) w[i * n + col] = col % 3 == 0 ? -2.0f : 2.0f;
  }
  PackedMatrix packed = PackedMatrix::Pack(w.data(), k, n);
  packed.AddInt8();
  std::vector<float> c(m * n);
  int8_->gemm_packed(m, a.data(), k, packed, c.data(), n, false);
  for (int r = 0; r < m; ++r) {
    for (int col = 0; col < n; ++col) {
      const float expected = (r % 2 == 0 ? 1.0f : -1.0f) * (col % 3 == 0 ? -2.0f : 2.0f) * k;
      EXPECT_NEAR(c[r * n + col], expected, 1e-4f * k) << r << "," << col;
    }
  }
}

TEST_P(Int8KernelsTest, MatrixWithoutCodesRunsFloat32) {
  std::mt19937 rng(3);
  auto a = Random(5 * 64, rng), w = Random(64 * 32, rng);
  PackedMatrix plain = PackedMatrix::Pack(w.data(), 64, 32);
  std::vector<float> c1(5 * 32), c2(5 * 32);
  int8_->gemm_packed(5, a.data(), 64, plain, c1.data(), 32, false);
  ScalarKernels().gemm(5, 32, 64, a.data(), 64, w.data(), 32, c2.data(), 32, false);
  ExpectClose(c1, c2);
}

INSTANTIATE_TEST_SUITE_P(Isa, Int8KernelsTest,
                         ::testing::Values(KernelIsa::kScalarInt8, KernelIsa::kAvx2Int8,
                                           KernelIsa::kAvxVnniInt8, KernelIsa::kAvx512Int8,
                                           KernelIsa::kNeonInt8, KernelIsa::kNeonInt8Mull),
                         [](const auto& info) {
                           switch (info.param) {
                             case KernelIsa::kScalarInt8:
                               return "Scalar";
                             case KernelIsa::kAvx2Int8:
                               return "Avx2";
                             case KernelIsa::kAvxVnniInt8:
                               return "AvxVnni";
                             case KernelIsa::kNeonInt8:
                               return "NeonDot";
                             case KernelIsa::kNeonInt8Mull:
                               return "NeonMull";
                             default:
                               return "Avx512Vnni";
                           }
                         });

TEST(KernelFamilyTest, NamesRoundTrip) {
  for (KernelFamily f : {KernelFamily::kScalar, KernelFamily::kAvx2, KernelFamily::kAvxVnni,
                         KernelFamily::kAvx512, KernelFamily::kNeon}) {
    auto parsed = ParseKernelFamily(KernelFamilyName(f));
    ASSERT_TRUE(parsed.ok());
    EXPECT_EQ(*parsed, f);
  }
  EXPECT_EQ(*ParseKernelFamily("auto"), BestKernelFamily());
  EXPECT_EQ(*ParseKernelFamily(""), BestKernelFamily());
  auto bad = ParseKernelFamily("sse9");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().code(), StatusCode::kInvalidParameter);
  EXPECT_NE(bad.status().message().find("sse9"), std::string::npos);
}

// Each family the CPU runs has tables of its own instruction sets; one it lacks is an error that
// names what is missing, never a table that would fault.
TEST(KernelFamilyTest, TablesMatchTheFamilyOrExplainWhatIsMissing) {
  EXPECT_TRUE(CpuSupportsKernelFamily(KernelFamily::kScalar));
  EXPECT_TRUE(CpuSupportsKernelFamily(BestKernelFamily()));
  for (KernelFamily f : {KernelFamily::kScalar, KernelFamily::kAvx2, KernelFamily::kAvxVnni,
                         KernelFamily::kAvx512, KernelFamily::kNeon}) {
    auto tables = TablesOfKernelFamily(f);
    ASSERT_EQ(tables.ok(), CpuSupportsKernelFamily(f)) << KernelFamilyName(f);
    if (!tables.ok()) {
      EXPECT_EQ(tables.status().code(), StatusCode::kInvalidParameter);
      EXPECT_NE(tables.status().message().find("lacks"), std::string::npos);
      continue;
    }
    ASSERT_NE(tables->fp32, nullptr);
    ASSERT_NE(tables->int8, nullptr);
    EXPECT_EQ(tables->fp32->precision, KernelPrecision::kFloat32);
    EXPECT_EQ(tables->int8->precision, KernelPrecision::kInt8);
    switch (f) {
      case KernelFamily::kScalar:
        EXPECT_EQ(tables->fp32->isa, KernelIsa::kScalar);
        EXPECT_EQ(tables->int8->isa, KernelIsa::kScalarInt8);
        EXPECT_EQ(tables->bf16, nullptr);
        break;
      case KernelFamily::kAvx2:
        EXPECT_EQ(tables->fp32->isa, KernelIsa::kAvx2);
        EXPECT_EQ(tables->int8->isa, KernelIsa::kAvx2Int8);
        EXPECT_EQ(tables->bf16, nullptr);
        break;
      case KernelFamily::kAvxVnni:
        EXPECT_EQ(tables->fp32->isa, KernelIsa::kAvx2);
        EXPECT_EQ(tables->int8->isa, KernelIsa::kAvxVnniInt8);
        break;
      case KernelFamily::kAvx512:
        EXPECT_EQ(tables->fp32->isa, KernelIsa::kAvx512);
        EXPECT_EQ(tables->bf16, Avx512Bf16Kernels());
        EXPECT_EQ(tables->int8->isa, Avx512Int8Kernels() != nullptr    ? KernelIsa::kAvx512Int8
                                     : AvxVnniInt8Kernels() != nullptr ? KernelIsa::kAvxVnniInt8
                                                                       : KernelIsa::kAvx2Int8);
        break;
      case KernelFamily::kNeon:
        EXPECT_EQ(tables->fp32->isa, KernelIsa::kNeon);
        EXPECT_EQ(tables->bf16, nullptr);
        // Without the dot-product extension, the widening-multiply kernel (the same results).
        EXPECT_NE(NeonMullInt8Kernels(), nullptr);
        EXPECT_EQ(NeonInt8Kernels() != nullptr, CpuHasArmDotProduct());
        EXPECT_EQ(tables->int8->isa,
                  CpuHasArmDotProduct() ? KernelIsa::kNeonInt8 : KernelIsa::kNeonInt8Mull);
        break;
    }
  }
}

TEST(KernelFamilyTest, EnvironmentIsParsedAndCheckedAgainstTheCpu) {
  const char* saved = std::getenv("ENGRAM_KERNELS");
  const std::string restore = saved == nullptr ? "" : saved;
  setenv("ENGRAM_KERNELS", "scalar", 1);
  auto scalar = KernelFamilyFromEnvironment();
  ASSERT_TRUE(scalar.ok());
  EXPECT_EQ(*scalar, KernelFamily::kScalar);
  setenv("ENGRAM_KERNELS", "mmx", 1);
  auto unknown = KernelFamilyFromEnvironment();
  ASSERT_FALSE(unknown.ok());
  EXPECT_NE(unknown.status().message().find("ENGRAM_KERNELS"), std::string::npos);
  for (KernelFamily f : {KernelFamily::kAvxVnni, KernelFamily::kAvx512, KernelFamily::kNeon}) {
    setenv("ENGRAM_KERNELS", KernelFamilyName(f), 1);
    EXPECT_EQ(KernelFamilyFromEnvironment().ok(), CpuSupportsKernelFamily(f));
  }
  unsetenv("ENGRAM_KERNELS");
  EXPECT_EQ(*KernelFamilyFromEnvironment(), BestKernelFamily());
  if (saved != nullptr) setenv("ENGRAM_KERNELS", restore.c_str(), 1);
}

// Once Kernels() has answered, the family stays: choosing it again is fine, another one is a
// conflict (the process would otherwise mix kernels).
TEST(KernelFamilyTest, ChoiceIsFixedAfterFirstUse) {
  const KernelFamily used = SelectedKernelFamily();
  EXPECT_EQ(Kernels().isa, TablesOfKernelFamily(used)->fp32->isa);
  EXPECT_TRUE(ChooseKernelFamily(used).ok());
  const KernelFamily other =
      used == KernelFamily::kScalar ? KernelFamily::kAvx2 : KernelFamily::kScalar;
  const Status st = ChooseKernelFamily(other);
  if (CpuSupportsKernelFamily(other)) {
    EXPECT_EQ(st.code(), StatusCode::kConflict);
  } else {
    EXPECT_EQ(st.code(), StatusCode::kInvalidParameter);
  }
  EXPECT_EQ(SelectedKernelFamily(), used);
}

TEST(Bf16KernelsTest, RoundsToNearestEven) {
  EXPECT_EQ(FloatToBf16(1.0f), 0x3F80);
  EXPECT_EQ(FloatToBf16(-2.0f), 0xC000);
  EXPECT_EQ(FloatToBf16(1.00390625f), 0x3F80);  // exactly halfway: ties to even (down)
  EXPECT_EQ(FloatToBf16(1.01171875f), 0x3F82);  // halfway above an odd value: up to even
  EXPECT_EQ(FloatToBf16(1.005f), 0x3F81);
}

INSTANTIATE_TEST_SUITE_P(Isa, SimdKernelsTest,
                         ::testing::Values(KernelIsa::kAvx2, KernelIsa::kAvx512, KernelIsa::kNeon),
                         [](const auto& info) {
                           return info.param == KernelIsa::kAvx512 ? "Avx512"
                                  : info.param == KernelIsa::kNeon ? "Neon"
                                                                   : "Avx2";
                         });

TEST(CosineTest, NormalisesAndHandlesZero) {
  const float a[3] = {1, 0, 0}, b[3] = {2, 0, 0}, c[3] = {0, 3, 0}, z[3] = {0, 0, 0};
  EXPECT_FLOAT_EQ(Cosine(a, b, 3), 1.0f);
  EXPECT_FLOAT_EQ(Cosine(a, c, 3), 0.0f);
  EXPECT_FLOAT_EQ(Cosine(a, z, 3), 0.0f);
  EXPECT_FLOAT_EQ(Dot(a, b, 3), 2.0f);
}

}  // namespace
}  // namespace engram
