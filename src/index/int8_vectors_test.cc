#include "index/int8_vectors.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "index/test_vectors.h"

namespace engram {
namespace {

using test_vectors::DotF;
using test_vectors::RandomUnit;

TEST(Int8VectorsTest, SimdMatchesScalar) {
  std::mt19937 rng(1);
  std::uniform_int_distribution<int> d(-127, 127);
  for (int dim : {1, 15, 16, 17, 31, 32, 33, 48, 512, 515}) {
    std::vector<int8_t> a(dim), b(dim);
    for (int i = 0; i < dim; ++i) {
      a[i] = static_cast<int8_t>(d(rng));
      b[i] = static_cast<int8_t>(d(rng));
    }
    EXPECT_EQ(DotInt8(a.data(), b.data(), dim), DotInt8Scalar(a.data(), b.data(), dim)) << dim;
  }
}

TEST(Int8VectorsTest, ManyMatchesScalar) {
  // The batched path (AVX-512 VNNI where present) against the scalar one, including the extreme
  // codes (-127, 127) and dims that are not a multiple of 64.
  std::mt19937 rng(3);
  std::uniform_int_distribution<int> d(-127, 127);
  for (int dim : {1, 63, 64, 65, 512, 515}) {
    const size_t n = 37;
    std::vector<int8_t> q(dim), codes(n * dim);
    for (auto& x : q) x = static_cast<int8_t>(d(rng));
    for (auto& x : codes) x = static_cast<int8_t>(d(rng));
    for (int i = 0; i < dim; i += 7) codes[i] = (i % 2) ? 127 : -127;
    q[0] = -127;
    std::vector<int32_t> out(n, -1), summed(n, -1), sums(n);
    for (size_t i = 0; i < n; ++i) sums[i] = CodeSum(codes.data() + i * dim, dim);
    DotInt8Many(q.data(), codes.data(), dim, n, out.data());
    DotInt8ManySummed(q.data(), codes.data(), sums.data(), dim, n, summed.data());
    for (size_t i = 0; i < n; ++i) {
      const int32_t want = DotInt8Scalar(q.data(), codes.data() + i * dim, dim);
      EXPECT_EQ(out[i], want) << dim << " " << i;
      EXPECT_EQ(summed[i], want) << dim << " " << i;
    }
  }
}

// Every family's scan this CPU runs (forced, whatever the process picked), and the NEON scan
// without the dot-product extension wherever it runs, against the scalar sums: extreme codes,
// dims with and without a tail past the last 16, 32 or 64 bytes, and code counts that leave a
// remainder after the four-code steps.
TEST(Int8VectorsTest, EveryFamilyScanMatchesScalar) {
  std::mt19937 rng(5);
  std::uniform_int_distribution<int> d(-127, 127);
  std::vector<std::pair<std::string, Int8ScanFn>> scans;
  for (KernelFamily family : {KernelFamily::kScalar, KernelFamily::kAvx2, KernelFamily::kAvxVnni,
                              KernelFamily::kAvx512, KernelFamily::kNeon}) {
    const Int8ScanFn scan = Int8ScanOfFamily(family);
    if (scan == nullptr) {
      EXPECT_FALSE(CpuSupportsKernelFamily(family)) << KernelFamilyName(family);
      continue;
    }
    scans.emplace_back(KernelFamilyName(family), scan);
  }
  if (NeonMullInt8Scan() != nullptr) scans.emplace_back("neon without SDOT", NeonMullInt8Scan());
  EXPECT_GE(scans.size(), 1u);
  for (const auto& [name, scan] : scans) {
    for (int dim : {1, 15, 16, 17, 31, 32, 33, 48, 100, 512, 515}) {
      for (size_t n : {size_t{1}, size_t{3}, size_t{4}, size_t{9}}) {
        std::vector<int8_t> q(dim), codes(n * dim);
        for (auto& x : q) x = static_cast<int8_t>(d(rng));
        for (auto& x : codes) x = static_cast<int8_t>(d(rng));
        for (size_t i = 0; i < codes.size(); i += 5) codes[i] = (i % 2) ? 127 : -127;
        for (int i = 0; i < dim; i += 3) q[i] = (i % 2) ? -127 : 127;
        std::vector<int32_t> sums(n), got(n, -1);
        for (size_t i = 0; i < n; ++i) sums[i] = CodeSum(codes.data() + i * dim, dim);
        scan(q.data(), codes.data(), sums.data(), dim, n, got.data());
        for (size_t i = 0; i < n; ++i) {
          EXPECT_EQ(got[i], DotInt8Scalar(q.data(), codes.data() + i * dim, dim))
              << name << " dim " << dim << " n " << n << " code " << i;
        }
      }
    }
  }
}

// Every code and query value at +-127 over a long vector: each int16 pair of the widening
// products holds 2 x 127 x 127 = 32258, the most it can, and the sums must stay exact.
TEST(Int8VectorsTest, ExtremeCodesAreExactInEveryScan) {
  const int dim = 2048;
  const size_t n = 6;
  std::vector<int8_t> q(dim), codes(n * dim);
  for (int i = 0; i < dim; ++i) q[i] = (i / 2) % 2 ? -127 : 127;
  for (size_t c = 0; c < n; ++c) {
    for (int i = 0; i < dim; ++i) {
      codes[c * dim + i] = static_cast<int8_t>(c % 2 == 0 ? q[i] : (c % 3 == 0 ? -q[i] : 127));
    }
  }
  std::vector<Int8ScanFn> scans = {Int8ScanOfFamily(BestKernelFamily())};
  if (NeonMullInt8Scan() != nullptr) scans.push_back(NeonMullInt8Scan());
  std::vector<int32_t> sums(n);
  for (size_t c = 0; c < n; ++c) sums[c] = CodeSum(codes.data() + c * dim, dim);
  for (Int8ScanFn scan : scans) {
    std::vector<int32_t> got(n, -1);
    scan(q.data(), codes.data(), sums.data(), dim, n, got.data());
    for (size_t c = 0; c < n; ++c) {
      EXPECT_EQ(got[c], DotInt8Scalar(q.data(), codes.data() + c * dim, dim)) << "code " << c;
    }
    EXPECT_EQ(got[0], dim * 127 * 127);
  }
}

// The neon family's scan is SDOT exactly where the CPU has the dot-product extension.
TEST(Int8VectorsTest, NeonScanFollowsTheDotProductExtension) {
  if (!CpuSupportsKernelFamily(KernelFamily::kNeon)) GTEST_SKIP() << "not an AArch64 CPU";
  ASSERT_NE(NeonMullInt8Scan(), nullptr);
  EXPECT_EQ(Int8ScanOfFamily(KernelFamily::kNeon) == NeonMullInt8Scan(), !CpuHasArmDotProduct());
}

TEST(Int8VectorsTest, QuantisedDotIsClose) {
  std::mt19937 rng(2);
  for (int t = 0; t < 50; ++t) {
    auto a = RandomUnit(rng, 512), b = RandomUnit(rng, 512);
    std::vector<int8_t> ca(512), cb(512);
    float sa = QuantizeInt8(a.data(), 512, ca.data());
    float sb = QuantizeInt8(b.data(), 512, cb.data());
    EXPECT_NEAR(sa * sb * DotInt8(ca.data(), cb.data(), 512), DotF(a, b), 0.01);
  }
}

}  // namespace
}  // namespace engram
