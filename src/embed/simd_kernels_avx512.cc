// The AVX-512F float32 kernels and the AVX512_BF16 packed products (see
// simd_kernels_internal.h), compiled with per-function target attributes: only the tables whose
// CPU check passed call them.
#if defined(__x86_64__)
#include <immintrin.h>

#include <algorithm>
#include <cstdint>
#include <vector>

#include "embed/simd_kernels_internal.h"

namespace engram {
namespace simd_internal {

// ---------------------------------------------------------------------------------------------
// AVX-512 versions: same blocking with 16-float vectors, so one packed panel row is one register.
// Picked over AVX2 when the CPU has AVX-512F (Zen 4/5, Ice Lake and later): twice the FMA width.

__attribute__((target("avx512f"))) float DotAvx512(const float* a, const float* b, int n) {
  __m512 s0 = _mm512_setzero_ps(), s1 = _mm512_setzero_ps();
  int i = 0;
  for (; i + 32 <= n; i += 32) {
    s0 = _mm512_fmadd_ps(_mm512_loadu_ps(a + i), _mm512_loadu_ps(b + i), s0);
    s1 = _mm512_fmadd_ps(_mm512_loadu_ps(a + i + 16), _mm512_loadu_ps(b + i + 16), s1);
  }
  if (i + 16 <= n) {
    s0 = _mm512_fmadd_ps(_mm512_loadu_ps(a + i), _mm512_loadu_ps(b + i), s0);
    i += 16;
  }
  if (i < n) {
    const __mmask16 mask = static_cast<__mmask16>((1u << (n - i)) - 1);
    s1 =
        _mm512_fmadd_ps(_mm512_maskz_loadu_ps(mask, a + i), _mm512_maskz_loadu_ps(mask, b + i), s1);
  }
  // Not _mm512_reduce_add_ps: GCC 12's header trips -Wuninitialized inside it.
  alignas(64) float lanes[16];
  _mm512_store_ps(lanes, _mm512_add_ps(s0, s1));
  float sum = 0;
  for (float lane : lanes) sum += lane;
  return sum;
}

namespace {

// C[kRows x (16*kVecs)] (+)= A[kRows x k] * B, where vector v of B's row kk is at
// b[v] + kk*ldb. `mask` limits the last vector's columns (all ones when full).
template <int kRows, int kVecs>
__attribute__((target("avx512f"))) void MicroTileAvx512(int k, const float* a, int lda,
                                                        const float* b0, const float* b1, int ldb,
                                                        float* c, int ldc, bool load_c,
                                                        __mmask16 mask) {
  __m512 acc[kRows][kVecs];
  const float* b[2] = {b0, b1};
#pragma GCC unroll 12
  for (int r = 0; r < kRows; ++r) {
#pragma GCC unroll 2
    for (int v = 0; v < kVecs; ++v) {
      const __mmask16 m = v == kVecs - 1 ? mask : static_cast<__mmask16>(0xFFFF);
      acc[r][v] = load_c ? _mm512_maskz_loadu_ps(m, c + r * ldc + 16 * v) : _mm512_setzero_ps();
    }
  }
  for (int kk = 0; kk < k; ++kk) {
    __m512 bv[kVecs];
#pragma GCC unroll 2
    for (int v = 0; v < kVecs; ++v) {
      const __mmask16 m = v == kVecs - 1 ? mask : static_cast<__mmask16>(0xFFFF);
      bv[v] = _mm512_maskz_loadu_ps(m, b[v] + static_cast<size_t>(kk) * ldb);
    }
#pragma GCC unroll 12
    for (int r = 0; r < kRows; ++r) {
      const __m512 av = _mm512_set1_ps(a[r * lda + kk]);
#pragma GCC unroll 2
      for (int v = 0; v < kVecs; ++v) acc[r][v] = _mm512_fmadd_ps(av, bv[v], acc[r][v]);
    }
  }
#pragma GCC unroll 12
  for (int r = 0; r < kRows; ++r) {
#pragma GCC unroll 2
    for (int v = 0; v < kVecs; ++v) {
      const __mmask16 m = v == kVecs - 1 ? mask : static_cast<__mmask16>(0xFFFF);
      _mm512_mask_storeu_ps(c + r * ldc + 16 * v, m, acc[r][v]);
    }
  }
}

template <int kVecs>
__attribute__((target("avx512f"))) void MicroTileDispatch512(int rows, int k, const float* a,
                                                             int lda, const float* b0,
                                                             const float* b1, int ldb, float* c,
                                                             int ldc, bool load_c, __mmask16 mask) {
  ForTileRows(rows, [&](auto r) {
    MicroTileAvx512<decltype(r)::value, kVecs>(k, a, lda, b0, b1, ldb, c, ldc, load_c, mask);
  });
}

}  // namespace

__attribute__((target("avx512f"))) void GemmAvx512(int m, int n, int k, const float* a, int lda,
                                                   const float* b, int ldb, float* c, int ldc,
                                                   bool accumulate) {
  int j = 0;
  for (; j + 32 <= n; j += 32) {
    for (int r = 0; r < m; r += kRowsPerTile512) {
      MicroTileDispatch512<2>(std::min(kRowsPerTile512, m - r), k, a + static_cast<size_t>(r) * lda,
                              lda, b + j, b + j + 16, ldb, c + static_cast<size_t>(r) * ldc + j,
                              ldc, accumulate, 0xFFFF);
    }
  }
  if (j == n) return;
  // 1..31 columns left: one or two vectors, the last one masked.
  const int left = n - j;
  const __mmask16 mask = static_cast<__mmask16>(left % 16 == 0 ? 0xFFFF : (1u << (left % 16)) - 1);
  for (int r = 0; r < m; r += kRowsPerTile512) {
    const int rows = std::min(kRowsPerTile512, m - r);
    const float* a_block = a + static_cast<size_t>(r) * lda;
    float* c_block = c + static_cast<size_t>(r) * ldc + j;
    if (left > 16) {
      MicroTileDispatch512<2>(rows, k, a_block, lda, b + j, b + j + 16, ldb, c_block, ldc,
                              accumulate, mask);
    } else {
      MicroTileDispatch512<1>(rows, k, a_block, lda, b + j, b + j, ldb, c_block, ldc, accumulate,
                              mask);
    }
  }
}

__attribute__((target("avx512f"))) void GemmPackedAvx512(int m, const float* a, int lda,
                                                         const PackedMatrix& b, float* c, int ldc,
                                                         bool accumulate) {
  const int depth = b.rows();
  const int panels = b.cols() / kPanel;
  for (int k0 = 0; k0 < depth; k0 += kDepthBlock) {
    const int kc = std::min(kDepthBlock, depth - k0);
    const bool load_c = accumulate || k0 > 0;
    for (int p = 0; p < panels; p += 2) {
      const float* b0 = b.panel(p) + static_cast<size_t>(k0) * kPanel;
      const bool pair = p + 1 < panels;
      const float* b1 = pair ? b.panel(p + 1) + static_cast<size_t>(k0) * kPanel : b0;
      for (int r = 0; r < m; r += kRowsPerTile512) {
        const int rows = std::min(kRowsPerTile512, m - r);
        const float* a_block = a + static_cast<size_t>(r) * lda + k0;
        float* c_block = c + static_cast<size_t>(r) * ldc + p * kPanel;
        if (pair) {
          MicroTileDispatch512<2>(rows, kc, a_block, lda, b0, b1, kPanel, c_block, ldc, load_c,
                                  0xFFFF);
        } else {
          MicroTileDispatch512<1>(rows, kc, a_block, lda, b0, b0, kPanel, c_block, ldc, load_c,
                                  0xFFFF);
        }
      }
    }
  }
}

namespace {

// bfloat16 micro-tile: C[kRows x 32] (+)= A * B over `pairs` row pairs of B, A given as
// bf16 pairs (one uint32 per pair of columns of A's row), B as two bf16 panels (64 bytes per pair).
template <int kRows>
__attribute__((target("avx512f,avx512bf16"))) void MicroTileBf16(int pairs, const uint32_t* a,
                                                                 int lda_pairs, const uint16_t* b0,
                                                                 const uint16_t* b1, float* c,
                                                                 int ldc, bool load_c) {
  __m512 acc[kRows][2];
#pragma GCC unroll 12
  for (int r = 0; r < kRows; ++r) {
    acc[r][0] = load_c ? _mm512_loadu_ps(c + r * ldc) : _mm512_setzero_ps();
    acc[r][1] = load_c ? _mm512_loadu_ps(c + r * ldc + 16) : _mm512_setzero_ps();
  }
  for (int q = 0; q < pairs; ++q) {
    const __m512bh w0 = (__m512bh)_mm512_loadu_si512(b0 + static_cast<size_t>(q) * 32);
    const __m512bh w1 = (__m512bh)_mm512_loadu_si512(b1 + static_cast<size_t>(q) * 32);
#pragma GCC unroll 12
    for (int r = 0; r < kRows; ++r) {
      const __m512bh av =
          (__m512bh)_mm512_set1_epi32(static_cast<int>(a[static_cast<size_t>(r) * lda_pairs + q]));
      acc[r][0] = _mm512_dpbf16_ps(acc[r][0], av, w0);
      acc[r][1] = _mm512_dpbf16_ps(acc[r][1], av, w1);
    }
  }
#pragma GCC unroll 12
  for (int r = 0; r < kRows; ++r) {
    _mm512_storeu_ps(c + r * ldc, acc[r][0]);
    _mm512_storeu_ps(c + r * ldc + 16, acc[r][1]);
  }
}

// Same as above for a single panel (16 columns).
template <int kRows>
__attribute__((target("avx512f,avx512bf16"))) void MicroTileBf16One(int pairs, const uint32_t* a,
                                                                    int lda_pairs,
                                                                    const uint16_t* b0, float* c,
                                                                    int ldc, bool load_c) {
  __m512 acc[kRows];
#pragma GCC unroll 12
  for (int r = 0; r < kRows; ++r)
    acc[r] = load_c ? _mm512_loadu_ps(c + r * ldc) : _mm512_setzero_ps();
  for (int q = 0; q < pairs; ++q) {
    const __m512bh w0 = (__m512bh)_mm512_loadu_si512(b0 + static_cast<size_t>(q) * 32);
#pragma GCC unroll 12
    for (int r = 0; r < kRows; ++r) {
      const __m512bh av =
          (__m512bh)_mm512_set1_epi32(static_cast<int>(a[static_cast<size_t>(r) * lda_pairs + q]));
      acc[r] = _mm512_dpbf16_ps(acc[r], av, w0);
    }
  }
#pragma GCC unroll 12
  for (int r = 0; r < kRows; ++r) _mm512_storeu_ps(c + r * ldc, acc[r]);
}

}  // namespace

__attribute__((target("avx512f,avx512bf16"))) void GemmPackedBf16(int m, const float* a, int lda,
                                                                  const PackedMatrix& b, float* c,
                                                                  int ldc, bool accumulate) {
  if (!b.has_bf16()) {  // a matrix packed without bf16: the float32 kernel, never a wrong answer
    GemmPackedAvx512(m, a, lda, b, c, ldc, accumulate);
    return;
  }
  const int depth = b.rows();
  const int pairs = (depth + 1) / 2;
  // A rounded to bf16 pairs once per call (m x pairs); thread-local so calls do not allocate.
  thread_local std::vector<uint32_t> a_pairs;
  a_pairs.resize(static_cast<size_t>(m) * pairs);
  for (int r = 0; r < m; ++r) {
    const float* row = a + static_cast<size_t>(r) * lda;
    uint32_t* dst = a_pairs.data() + static_cast<size_t>(r) * pairs;
    for (int q = 0; q < pairs; ++q) {
      const uint32_t lo = FloatToBf16(row[2 * q]);
      const uint32_t hi = 2 * q + 1 < depth ? FloatToBf16(row[2 * q + 1]) : 0;
      dst[q] = lo | (hi << 16);
    }
  }
  const int panels = b.cols() / kPanel;
  for (int p = 0; p < panels; p += 2) {
    const bool pair = p + 1 < panels;
    for (int r = 0; r < m; r += kRowsPerTile512) {
      const int rows = std::min(kRowsPerTile512, m - r);
      const uint32_t* a_block = a_pairs.data() + static_cast<size_t>(r) * pairs;
      float* c_block = c + static_cast<size_t>(r) * ldc + p * kPanel;
      ForTileRows(rows, [&](auto rc) {
        constexpr int R = decltype(rc)::value;
        if (pair) {
          MicroTileBf16<R>(pairs, a_block, pairs, b.bf16_panel(p), b.bf16_panel(p + 1), c_block,
                           ldc, accumulate);
        } else {
          MicroTileBf16One<R>(pairs, a_block, pairs, b.bf16_panel(p), c_block, ldc, accumulate);
        }
      });
    }
  }
}

}  // namespace simd_internal
}  // namespace engram

#endif  // __x86_64__
