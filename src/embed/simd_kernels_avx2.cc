// The AVX2 + FMA float32 kernels (see simd_kernels_internal.h), compiled with per-function
// target attributes: only the tables whose CPU check passed call them.
#if defined(__x86_64__)
#include <immintrin.h>

#include <algorithm>

#include "embed/simd_kernels_internal.h"

namespace engram {
namespace simd_internal {
namespace {

// ---------------------------------------------------------------------------------------------
// AVX2 + FMA versions.

// Rows per micro-tile: 6 rows x 2 vectors = 12 accumulators + 2 B vectors + 1 broadcast fits the
// 16 ymm registers.
constexpr int kRowsPerTile = 6;

__attribute__((target("avx2,fma"))) inline float HorizontalSum(__m256 v) {
  __m128 lo = _mm256_castps256_ps128(v);
  __m128 hi = _mm256_extractf128_ps(v, 1);
  lo = _mm_add_ps(lo, hi);
  __m128 shuf = _mm_movehdup_ps(lo);
  __m128 sums = _mm_add_ps(lo, shuf);
  shuf = _mm_movehl_ps(shuf, sums);
  sums = _mm_add_ss(sums, shuf);
  return _mm_cvtss_f32(sums);
}

}  // namespace

__attribute__((target("avx2,fma"))) float DotAvx2(const float* a, const float* b, int n) {
  __m256 s0 = _mm256_setzero_ps(), s1 = _mm256_setzero_ps();
  __m256 s2 = _mm256_setzero_ps(), s3 = _mm256_setzero_ps();
  int i = 0;
  for (; i + 32 <= n; i += 32) {
    s0 = _mm256_fmadd_ps(_mm256_loadu_ps(a + i), _mm256_loadu_ps(b + i), s0);
    s1 = _mm256_fmadd_ps(_mm256_loadu_ps(a + i + 8), _mm256_loadu_ps(b + i + 8), s1);
    s2 = _mm256_fmadd_ps(_mm256_loadu_ps(a + i + 16), _mm256_loadu_ps(b + i + 16), s2);
    s3 = _mm256_fmadd_ps(_mm256_loadu_ps(a + i + 24), _mm256_loadu_ps(b + i + 24), s3);
  }
  for (; i + 8 <= n; i += 8) {
    s0 = _mm256_fmadd_ps(_mm256_loadu_ps(a + i), _mm256_loadu_ps(b + i), s0);
  }
  float sum = HorizontalSum(_mm256_add_ps(_mm256_add_ps(s0, s1), _mm256_add_ps(s2, s3)));
  for (; i < n; ++i) sum += a[i] * b[i];
  return sum;
}

namespace {

// C[kRows x 16] (+)= A[kRows x k] * B[k x 16]. B's row kk is at b + kk*ldb.
template <int kRows>
__attribute__((target("avx2,fma"))) void MicroTileAvx2(int k, const float* a, int lda,
                                                       const float* b, int ldb, float* c, int ldc,
                                                       bool load_c) {
  __m256 acc[kRows][2];
#pragma GCC unroll 6
  for (int r = 0; r < kRows; ++r) {
    if (load_c) {
      acc[r][0] = _mm256_loadu_ps(c + r * ldc);
      acc[r][1] = _mm256_loadu_ps(c + r * ldc + 8);
    } else {
      acc[r][0] = _mm256_setzero_ps();
      acc[r][1] = _mm256_setzero_ps();
    }
  }
  for (int kk = 0; kk < k; ++kk) {
    const float* b_row = b + static_cast<size_t>(kk) * ldb;
    const __m256 b0 = _mm256_loadu_ps(b_row);
    const __m256 b1 = _mm256_loadu_ps(b_row + 8);
#pragma GCC unroll 6
    for (int r = 0; r < kRows; ++r) {
      const __m256 av = _mm256_broadcast_ss(a + r * lda + kk);
      acc[r][0] = _mm256_fmadd_ps(av, b0, acc[r][0]);
      acc[r][1] = _mm256_fmadd_ps(av, b1, acc[r][1]);
    }
  }
#pragma GCC unroll 6
  for (int r = 0; r < kRows; ++r) {
    _mm256_storeu_ps(c + r * ldc, acc[r][0]);
    _mm256_storeu_ps(c + r * ldc + 8, acc[r][1]);
  }
}

__attribute__((target("avx2,fma"))) void MicroTileDispatch(int rows, int k, const float* a, int lda,
                                                           const float* b, int ldb, float* c,
                                                           int ldc, bool load_c) {
  switch (rows) {
    case 6:
      MicroTileAvx2<6>(k, a, lda, b, ldb, c, ldc, load_c);
      break;
    case 5:
      MicroTileAvx2<5>(k, a, lda, b, ldb, c, ldc, load_c);
      break;
    case 4:
      MicroTileAvx2<4>(k, a, lda, b, ldb, c, ldc, load_c);
      break;
    case 3:
      MicroTileAvx2<3>(k, a, lda, b, ldb, c, ldc, load_c);
      break;
    case 2:
      MicroTileAvx2<2>(k, a, lda, b, ldb, c, ldc, load_c);
      break;
    case 1:
      MicroTileAvx2<1>(k, a, lda, b, ldb, c, ldc, load_c);
      break;
    default:
      break;
  }
}

}  // namespace

__attribute__((target("avx2,fma"))) void GemmAvx2(int m, int n, int k, const float* a, int lda,
                                                  const float* b, int ldb, float* c, int ldc,
                                                  bool accumulate) {
  const int n_tiled = n - n % kPanel;
  for (int j = 0; j < n_tiled; j += kPanel) {
    for (int r = 0; r < m; r += kRowsPerTile) {
      MicroTileDispatch(std::min(kRowsPerTile, m - r), k, a + static_cast<size_t>(r) * lda, lda,
                        b + j, ldb, c + static_cast<size_t>(r) * ldc + j, ldc, accumulate);
    }
  }
  if (n_tiled == n) return;
  // Columns left over (attention over a token count that is not a multiple of 16).
  for (int r = 0; r < m; ++r) {
    const float* a_row = a + static_cast<size_t>(r) * lda;
    float* c_row = c + static_cast<size_t>(r) * ldc;
    for (int j = n_tiled; j < n; ++j) {
      float sum = accumulate ? c_row[j] : 0.0f;
      for (int kk = 0; kk < k; ++kk) sum += a_row[kk] * b[static_cast<size_t>(kk) * ldb + j];
      c_row[j] = sum;
    }
  }
}

__attribute__((target("avx2,fma"))) void GemmPackedAvx2(int m, const float* a, int lda,
                                                        const PackedMatrix& b, float* c, int ldc,
                                                        bool accumulate) {
  const int depth = b.rows();
  const int panels = b.cols() / kPanel;
  for (int k0 = 0; k0 < depth; k0 += kDepthBlock) {
    const int kc = std::min(kDepthBlock, depth - k0);
    const bool load_c = accumulate || k0 > 0;
    for (int p = 0; p < panels; ++p) {
      const float* panel = b.panel(p) + static_cast<size_t>(k0) * kPanel;
      for (int r = 0; r < m; r += kRowsPerTile) {
        MicroTileDispatch(std::min(kRowsPerTile, m - r), kc, a + static_cast<size_t>(r) * lda + k0,
                          lda, panel, kPanel, c + static_cast<size_t>(r) * ldc + p * kPanel, ldc,
                          load_c);
      }
    }
  }
}

}  // namespace simd_internal
}  // namespace engram

#endif  // __x86_64__
