#include "embed/simd_kernels.h"

#if defined(__x86_64__)
#include <immintrin.h>
#endif
#if defined(__aarch64__)
#include <arm_neon.h>

#include "common/neon_int8.h"
#endif

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <type_traits>

namespace engram {
namespace {

constexpr int kPanel = PackedMatrix::kPanelWidth;
// Depth of one pass over a packed panel: 256 rows x 16 floats = 16 KB stays in L1 while every
// row block of A streams past it.
constexpr int kDepthBlock = 256;

// ---------------------------------------------------------------------------------------------
// Scalar versions: the reference semantics, and the fallback on CPUs without AVX2.

float DotScalar(const float* a, const float* b, int n) {
  float sum = 0;
  for (int i = 0; i < n; ++i) sum += a[i] * b[i];
  return sum;
}

void GemmScalar(int m, int n, int k, const float* a, int lda, const float* b, int ldb, float* c,
                int ldc, bool accumulate) {
  for (int r = 0; r < m; ++r) {
    float* c_row = c + static_cast<size_t>(r) * ldc;
    if (!accumulate) std::fill(c_row, c_row + n, 0.0f);
    const float* a_row = a + static_cast<size_t>(r) * lda;
    for (int kk = 0; kk < k; ++kk) {
      const float av = a_row[kk];
      const float* b_row = b + static_cast<size_t>(kk) * ldb;
      for (int j = 0; j < n; ++j) c_row[j] += av * b_row[j];
    }
  }
}

void GemmPackedScalar(int m, const float* a, int lda, const PackedMatrix& b, float* c, int ldc,
                      bool accumulate) {
  const int panels = b.cols() / kPanel;
  for (int p = 0; p < panels; ++p) {
    GemmScalar(m, kPanel, b.rows(), a, lda, b.panel(p), kPanel, c + p * kPanel, ldc, accumulate);
  }
}

#if defined(__x86_64__)
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

// ---------------------------------------------------------------------------------------------
// AVX-512 versions: same blocking with 16-float vectors, so one packed panel row is one register.
// Picked over AVX2 when the CPU has AVX-512F (Zen 4/5, Ice Lake and later): twice the FMA width.

constexpr int kRowsPerTile512 = 12;  // 12 rows x 2 vectors = 24 of the 32 zmm registers
// Depth of one pass of the int8 kernel over a panel pair, in quads of rows: 128 x 64 bytes = 8 KB
// per panel.
constexpr int kInt8DepthBlock = 128;

// Calls fn(std::integral_constant<int, R>{}) for R = rows in 1..kRowsPerTile512: the AVX-512
// micro-tiles take their row count as a template argument so that their accumulators stay in
// registers, and every kernel picks the instance for a block's rows this one way.
template <typename Fn>
void ForTileRows(int rows, Fn&& fn) {
  static_assert(kRowsPerTile512 == 12, "one case per row count");
  switch (rows) {
    case 12:
      fn(std::integral_constant<int, 12>{});
      break;
    case 11:
      fn(std::integral_constant<int, 11>{});
      break;
    case 10:
      fn(std::integral_constant<int, 10>{});
      break;
    case 9:
      fn(std::integral_constant<int, 9>{});
      break;
    case 8:
      fn(std::integral_constant<int, 8>{});
      break;
    case 7:
      fn(std::integral_constant<int, 7>{});
      break;
    case 6:
      fn(std::integral_constant<int, 6>{});
      break;
    case 5:
      fn(std::integral_constant<int, 5>{});
      break;
    case 4:
      fn(std::integral_constant<int, 4>{});
      break;
    case 3:
      fn(std::integral_constant<int, 3>{});
      break;
    case 2:
      fn(std::integral_constant<int, 2>{});
      break;
    case 1:
      fn(std::integral_constant<int, 1>{});
      break;
    default:
      break;
  }
}

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

#endif  // __x86_64__

// GCC 12 reports the AVX-512 intrinsics' deliberately undefined pass-through operands
// (_mm512_undefined_*) as uninitialised once they are inlined here; they are never read.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"

// Where a finished int8 tile goes: its rows' and columns' scales, the columns' offsets, and C.
struct Int8Tile {
  const float* a_scales;
  const float* b_scales;
  const int32_t* b_offsets;
  float* c;
  int ldc;
  bool load_c;
};

#if defined(__x86_64__)
// int8 micro-tile over one depth block: acc[kRows x 16*kVecs] (+)= A * B over `quads` quads of
// depth, in int32 (exact). A is given as unsigned bytes (a row's int8 codes + 128, four per
// uint32), B as int8 panels. `acc` (leading dimension 32) carries the sums between depth blocks;
// after the last block (`finish`) the tile is written to C instead: the column offsets (128 x
// the column's code sum) turn the unsigned products back into signed ones, then the row and
// column scales apply.
template <int kRows, int kVecs>
__attribute__((target("avx512f,avx512bw,avx512vnni"))) void MicroTileInt8(
    int quads, const uint32_t* a, int lda_quads, const int8_t* b0, const int8_t* b1,
    int32_t* acc_buf, bool first, bool finish, const Int8Tile& out) {
  constexpr int kLd = 2 * kPanel;
  // Written out per vector (no inner loop over kVecs, no array of B vectors): with those GCC
  // kept the accumulators in memory and copied registers around every product.
  __m512i acc[kRows][2];
#pragma GCC unroll 12
  for (int r = 0; r < kRows; ++r) {
    acc[r][0] = first ? _mm512_setzero_si512() : _mm512_loadu_si512(acc_buf + r * kLd);
    if constexpr (kVecs == 2) {
      acc[r][1] = first ? _mm512_setzero_si512() : _mm512_loadu_si512(acc_buf + r * kLd + 16);
    }
  }
  for (int q = 0; q < quads; ++q) {
    const __m512i w0 = _mm512_loadu_si512(b0 + static_cast<size_t>(q) * 64);
    const __m512i w1 = kVecs == 2 ? _mm512_loadu_si512(b1 + static_cast<size_t>(q) * 64) : w0;
#pragma GCC unroll 12
    for (int r = 0; r < kRows; ++r) {
      const __m512i av =
          _mm512_set1_epi32(static_cast<int>(a[static_cast<size_t>(r) * lda_quads + q]));
      acc[r][0] = _mm512_dpbusd_epi32(acc[r][0], av, w0);
      if constexpr (kVecs == 2) acc[r][1] = _mm512_dpbusd_epi32(acc[r][1], av, w1);
    }
  }
  if (!finish) {
#pragma GCC unroll 12
    for (int r = 0; r < kRows; ++r) {
#pragma GCC unroll 2
      for (int v = 0; v < kVecs; ++v) _mm512_storeu_si512(acc_buf + r * kLd + 16 * v, acc[r][v]);
    }
    return;
  }
#pragma GCC unroll 2
  for (int v = 0; v < kVecs; ++v) {
    const __m512 scale = _mm512_loadu_ps(out.b_scales + 16 * v);
    const __m512i offset = _mm512_loadu_si512(out.b_offsets + 16 * v);
#pragma GCC unroll 12
    for (int r = 0; r < kRows; ++r) {
      const __m512 exact = _mm512_cvtepi32_ps(_mm512_sub_epi32(acc[r][v], offset));
      const __m512 row_scale = _mm512_mul_ps(scale, _mm512_set1_ps(out.a_scales[r]));
      float* c = out.c + static_cast<size_t>(r) * out.ldc + 16 * v;
      const __m512 base = out.load_c ? _mm512_loadu_ps(c) : _mm512_setzero_ps();
      _mm512_storeu_ps(c, _mm512_fmadd_ps(exact, row_scale, base));
    }
  }
}

// Each row of A as unsigned bytes: round(a / s) + 128 with s = max |a| / 127 (s = 0 for a zero
// row, whose bytes are then all 128, i.e. zero), four per uint32, depth padded with 128.
__attribute__((target("avx512f,avx512bw"))) void QuantizeRowsUint8(int m, const float* a, int lda,
                                                                   int depth, uint32_t* out,
                                                                   float* scales) {
  const int quads = (depth + 3) / 4;
  const int full = depth / 16 * 16;
  const __mmask16 tail = static_cast<__mmask16>((1u << (depth - full)) - 1);
  for (int r = 0; r < m; ++r) {
    const float* row = a + static_cast<size_t>(r) * lda;
    __m512 max_abs = _mm512_setzero_ps();
    for (int i = 0; i < full; i += 16) {
      max_abs = _mm512_max_ps(max_abs, _mm512_abs_ps(_mm512_loadu_ps(row + i)));
    }
    if (tail != 0) {
      max_abs = _mm512_max_ps(max_abs, _mm512_abs_ps(_mm512_maskz_loadu_ps(tail, row + full)));
    }
    const float largest = _mm512_reduce_max_ps(max_abs);
    const float inv_scalar = largest > 0 ? 127.0f / largest : 0.0f;
    const __m512 inv = _mm512_set1_ps(inv_scalar);
    scales[r] = largest / 127.0f;
    uint8_t* dst = reinterpret_cast<uint8_t*>(out + static_cast<size_t>(r) * quads);
    const __m512i offset = _mm512_set1_epi32(128);
    // Rounded to nearest even (the default rounding mode); |a| / s <= 127, so +128 fits a byte.
    for (int i = 0; i < full; i += 16) {
      const __m512i code = _mm512_cvtps_epi32(_mm512_mul_ps(_mm512_loadu_ps(row + i), inv));
      _mm_storeu_si128(reinterpret_cast<__m128i*>(dst + i),
                       _mm512_cvtepi32_epi8(_mm512_add_epi32(code, offset)));
    }
    for (int i = full; i < 4 * quads; ++i) {
      const float x = i < depth ? row[i] * inv_scalar : 0.0f;
      dst[i] =
          static_cast<uint8_t>(std::clamp(static_cast<int>(std::nearbyint(x)), -127, 127) + 128);
    }
  }
}

__attribute__((target("avx512f,avx512bw,avx512vnni"))) void GemmPackedInt8(
    int m, const float* a, int lda, const PackedMatrix& b, float* c, int ldc, bool accumulate) {
  if (!b.has_int8()) {  // a matrix without int8 codes: the float32 kernel, never a wrong answer
    GemmPackedAvx512(m, a, lda, b, c, ldc, accumulate);
    return;
  }
  const int quads = (b.rows() + 3) / 4;
  // A quantised once per call; thread-local so calls do not allocate.
  thread_local std::vector<uint32_t> a_quads;
  thread_local std::vector<float> a_scales;
  a_quads.resize(static_cast<size_t>(m) * quads);
  a_scales.resize(static_cast<size_t>(m));
  QuantizeRowsUint8(m, a, lda, b.rows(), a_quads.data(), a_scales.data());
  // Depth blocks of kInt8DepthBlock quads keep a panel pair's block (2 x 8 KB) in L1 while
  // every row tile streams past it; the int32 sums wait in a thread-local buffer in between.
  thread_local std::vector<int32_t> acc;
  acc.resize(static_cast<size_t>(m) * 2 * kPanel);
  const int panels = b.cols() / kPanel;
  for (int p = 0; p < panels; p += 2) {
    const bool pair = p + 1 < panels;
    for (int q0 = 0; q0 < quads; q0 += kInt8DepthBlock) {
      const int qc = std::min(kInt8DepthBlock, quads - q0);
      const bool first = q0 == 0;
      const bool finish = q0 + qc == quads;
      const int8_t* b0 = b.int8_panel(p) + static_cast<size_t>(q0) * 64;
      const int8_t* b1 = pair ? b.int8_panel(p + 1) + static_cast<size_t>(q0) * 64 : b0;
      for (int r = 0; r < m; r += kRowsPerTile512) {
        const int rows = std::min(kRowsPerTile512, m - r);
        const uint32_t* a_block = a_quads.data() + static_cast<size_t>(r) * quads + q0;
        int32_t* acc_block = acc.data() + static_cast<size_t>(r) * 2 * kPanel;
        const Int8Tile out{a_scales.data() + r,
                           b.int8_scales() + p * kPanel,
                           b.int8_offsets() + p * kPanel,
                           c + static_cast<size_t>(r) * ldc + p * kPanel,
                           ldc,
                           accumulate};
        ForTileRows(rows, [&](auto rc) {
          constexpr int R = decltype(rc)::value;
          if (pair) {
            MicroTileInt8<R, 2>(qc, a_block, quads, b0, b1, acc_block, first, finish, out);
          } else {
            MicroTileInt8<R, 1>(qc, a_block, quads, b0, b0, acc_block, first, finish, out);
          }
        });
      }
    }
  }
}

#endif  // __x86_64__

#pragma GCC diagnostic pop

// ---------------------------------------------------------------------------------------------
// int8 without AVX512_VNNI. Every version quantises A exactly as QuantizeRowsUint8 does (same
// float operations, so the same codes) and sums the products exactly in int32, then applies
// the scales as MicroTileInt8 does: every int8 table gives the same C.

// Rows of A quantised for the int8 kernels below: signed codes, four per uint32 (depth padded
// with zeros), and their magnitudes for the AVX2 kernel.
struct Int8Rows {
  int quads = 0;
  std::vector<uint32_t> codes;
  std::vector<uint32_t> magnitudes;
  std::vector<float> scales;
};

// Quantises one row: returns its scale, writes round(a / s) to codes[0..4*quads) (zeros past
// depth).
float QuantizeRowScalar(const float* row, int depth, int quads, int8_t* codes) {
  float largest = 0;
  for (int i = 0; i < depth; ++i) largest = std::max(largest, std::fabs(row[i]));
  const float inv = largest > 0 ? 127.0f / largest : 0.0f;
  for (int i = 0; i < 4 * quads; ++i) {
    const float x = i < depth ? row[i] * inv : 0.0f;
    codes[i] = static_cast<int8_t>(std::clamp(static_cast<int>(std::nearbyint(x)), -127, 127));
  }
  return largest / 127.0f;
}

void QuantizeRowsScalar(int m, const float* a, int lda, int depth, Int8Rows& out) {
  out.quads = (depth + 3) / 4;
  out.codes.resize(static_cast<size_t>(m) * out.quads);
  out.scales.resize(static_cast<size_t>(m));
  for (int r = 0; r < m; ++r) {
    out.scales[r] = QuantizeRowScalar(
        a + static_cast<size_t>(r) * lda, depth, out.quads,
        reinterpret_cast<int8_t*>(out.codes.data() + static_cast<size_t>(r) * out.quads));
  }
}

// C[m x B.cols()] from int32 sums: the one place every non-VNNI int8 version scales its output
// in scalar code (the SIMD ones do the same operations per lane).
inline float ScaleInt8Sum(int32_t sum, float a_scale, float b_scale, float base) {
  return std::fma(static_cast<float>(sum), b_scale * a_scale, base);
}

void GemmPackedInt8Scalar(int m, const float* a, int lda, const PackedMatrix& b, float* c, int ldc,
                          bool accumulate) {
  if (!b.has_int8()) {
    GemmPackedScalar(m, a, lda, b, c, ldc, accumulate);
    return;
  }
  thread_local Int8Rows rows;
  QuantizeRowsScalar(m, a, lda, b.rows(), rows);
  const int panels = b.cols() / kPanel;
  for (int r = 0; r < m; ++r) {
    const int8_t* codes =
        reinterpret_cast<const int8_t*>(rows.codes.data() + static_cast<size_t>(r) * rows.quads);
    float* c_row = c + static_cast<size_t>(r) * ldc;
    for (int p = 0; p < panels; ++p) {
      const int8_t* panel = b.int8_panel(p);
      int32_t sums[kPanel] = {};
      for (int q = 0; q < rows.quads; ++q) {
        const int8_t* w = panel + static_cast<size_t>(q) * 4 * kPanel;
        for (int col = 0; col < kPanel; ++col) {
          for (int j = 0; j < 4; ++j) sums[col] += int32_t{codes[4 * q + j]} * w[4 * col + j];
        }
      }
      for (int col = 0; col < kPanel; ++col) {
        const int j = p * kPanel + col;
        c_row[j] = ScaleInt8Sum(sums[col], rows.scales[r], b.int8_scales()[j],
                                accumulate ? c_row[j] : 0.0f);
      }
    }
  }
}

#if defined(__x86_64__)
// The AVX2 quantiser: the scalar one's operations on 8 lanes (max |a|, a * (127 / max),
// round to nearest even), narrowed to bytes; with `magnitudes`, also |code|.
// With `offset_codes`, the codes are stored + 128 (unsigned bytes, the operand vpdpbusd wants:
// flipping a two's-complement byte's top bit adds 128), padding included.
__attribute__((target("avx2,fma"))) void QuantizeRowsAvx2(int m, const float* a, int lda, int depth,
                                                          bool magnitudes, bool offset_codes,
                                                          Int8Rows& out) {
  const int quads = (depth + 3) / 4;
  out.quads = quads;
  out.codes.resize(static_cast<size_t>(m) * quads);
  if (magnitudes) out.magnitudes.resize(static_cast<size_t>(m) * quads);
  out.scales.resize(static_cast<size_t>(m));
  const int full = depth / 32 * 32;
  const __m256 sign_bit = _mm256_set1_ps(-0.0f);
  // packs works within 128-bit lanes; this puts the four groups of eight codes back in order.
  const __m256i order = _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7);
  for (int r = 0; r < m; ++r) {
    const float* row = a + static_cast<size_t>(r) * lda;
    __m256 max_abs = _mm256_setzero_ps();
    int i = 0;
    for (; i + 8 <= depth; i += 8) {
      max_abs = _mm256_max_ps(max_abs, _mm256_andnot_ps(sign_bit, _mm256_loadu_ps(row + i)));
    }
    alignas(32) float lanes[8];
    _mm256_store_ps(lanes, max_abs);
    float largest = 0;
    for (float lane : lanes) largest = std::max(largest, lane);
    for (; i < depth; ++i) largest = std::max(largest, std::fabs(row[i]));
    const float inv_scalar = largest > 0 ? 127.0f / largest : 0.0f;
    const __m256 inv = _mm256_set1_ps(inv_scalar);
    out.scales[r] = largest / 127.0f;
    int8_t* dst = reinterpret_cast<int8_t*>(out.codes.data() + static_cast<size_t>(r) * quads);
    for (i = 0; i < full; i += 32) {
      const __m256i c0 = _mm256_cvtps_epi32(_mm256_mul_ps(_mm256_loadu_ps(row + i), inv));
      const __m256i c1 = _mm256_cvtps_epi32(_mm256_mul_ps(_mm256_loadu_ps(row + i + 8), inv));
      const __m256i c2 = _mm256_cvtps_epi32(_mm256_mul_ps(_mm256_loadu_ps(row + i + 16), inv));
      const __m256i c3 = _mm256_cvtps_epi32(_mm256_mul_ps(_mm256_loadu_ps(row + i + 24), inv));
      // |code| <= 127, so the saturating packs are exact.
      const __m256i bytes = _mm256_permutevar8x32_epi32(
          _mm256_packs_epi16(_mm256_packs_epi32(c0, c1), _mm256_packs_epi32(c2, c3)), order);
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(dst + i), bytes);
    }
    for (; i < 4 * quads; ++i) {
      const float x = i < depth ? row[i] * inv_scalar : 0.0f;
      dst[i] = static_cast<int8_t>(std::clamp(static_cast<int>(std::nearbyint(x)), -127, 127));
    }
    if (magnitudes) {
      int8_t* mag =
          reinterpret_cast<int8_t*>(out.magnitudes.data() + static_cast<size_t>(r) * quads);
      for (i = 0; i + 32 <= 4 * quads; i += 32) {
        _mm256_storeu_si256(
            reinterpret_cast<__m256i*>(mag + i),
            _mm256_abs_epi8(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(dst + i))));
      }
      for (; i < 4 * quads; ++i) mag[i] = static_cast<int8_t>(std::abs(dst[i]));
    }
    if (offset_codes) {
      const __m256i top = _mm256_set1_epi8(static_cast<char>(0x80));
      for (i = 0; i + 32 <= 4 * quads; i += 32) {
        auto* at = reinterpret_cast<__m256i*>(dst + i);
        _mm256_storeu_si256(at, _mm256_xor_si256(_mm256_loadu_si256(at), top));
      }
      for (; i < 4 * quads; ++i) dst[i] = static_cast<int8_t>(dst[i] ^ 0x80);
    }
  }
}

// Writes a finished tile: C = sum * (row scale * column scale) (+ C), 8 columns per vector.
template <int kRows, int kVecs>
__attribute__((target("avx2,fma"))) inline void StoreInt8TileAvx2(__m256i (&acc)[kRows][kVecs],
                                                                  const Int8Tile& out) {
#pragma GCC unroll 2
  for (int v = 0; v < kVecs; ++v) {
    const __m256 scale = _mm256_loadu_ps(out.b_scales + 8 * v);
#pragma GCC unroll 6
    for (int r = 0; r < kRows; ++r) {
      const __m256 row_scale = _mm256_mul_ps(scale, _mm256_set1_ps(out.a_scales[r]));
      float* c = out.c + static_cast<size_t>(r) * out.ldc + 8 * v;
      const __m256 base = out.load_c ? _mm256_loadu_ps(c) : _mm256_setzero_ps();
      _mm256_storeu_ps(c, _mm256_fmadd_ps(_mm256_cvtepi32_ps(acc[r][v]), row_scale, base));
    }
  }
}

// AVX2 micro-tile: C[kRows x 16] over the whole depth of one panel. vpmaddubsw multiplies
// unsigned by signed bytes and adds pairs into int16 with saturation; feeding it |a| and b with
// a's sign (vpsignb) keeps every pair within 2 * 127 * 127 = 32258, so nothing saturates, and
// vpmaddwd by ones widens the pairs into int32 quads.
constexpr int kRowsPerTileInt8Avx2 = 4;  // 8 accumulators + 2 panel vectors + temporaries

// The accumulators are named variables, not an array: GCC kept an array of them in memory (with
// every accumulator stored back on every step of the depth loop, several times slower) however
// the array was indexed. ENGRAM_INT8_ROWS(X) expands X(i) for the tile's rows 0..5.
#define ENGRAM_INT8_ROWS(X) X(0) X(1) X(2) X(3) X(4) X(5)

// acc0 += the int32 quad sums of |a| . (w0 with a's signs), acc1 the same for w1 (see
// MicroTileInt8Avx2), as one asm statement: with the intrinsics GCC 12 gave every sum a fresh
// register, copied it back into the accumulator's and spilled accumulators to the stack on every
// step. `sign` holds a row's quad of codes, `mag` their magnitudes, both broadcast.
__attribute__((target("avx2"))) inline void SignedBytesAccumulate(__m256i& acc0, __m256i& acc1,
                                                                  __m256i sign, __m256i mag,
                                                                  __m256i w0, __m256i w1,
                                                                  __m256i ones) {
  __m256i t0, t1;
  asm("vpsignb %[sign], %[w0], %[t0]\n\t"
      "vpsignb %[sign], %[w1], %[t1]\n\t"
      "vpmaddubsw %[t0], %[mag], %[t0]\n\t"
      "vpmaddubsw %[t1], %[mag], %[t1]\n\t"
      "vpmaddwd %[ones], %[t0], %[t0]\n\t"
      "vpmaddwd %[ones], %[t1], %[t1]\n\t"
      "vpaddd %[t0], %[acc0], %[acc0]\n\t"
      "vpaddd %[t1], %[acc1], %[acc1]"
      : [acc0] "+x"(acc0), [acc1] "+x"(acc1), [t0] "=&x"(t0), [t1] "=&x"(t1)
      : [sign] "x"(sign), [mag] "x"(mag), [w0] "x"(w0), [w1] "x"(w1), [ones] "x"(ones));
}

template <int kRows>
__attribute__((target("avx2,fma"))) void MicroTileInt8Avx2(int quads, const uint32_t* codes,
                                                           const uint32_t* magnitudes, int ld,
                                                           const int8_t* b, const Int8Tile& out) {
  static_assert(kRows >= 1 && kRows <= kRowsPerTileInt8Avx2);
  const __m256i zero = _mm256_setzero_si256();
  [[maybe_unused]] __m256i c00 = zero, c01 = zero, c10 = zero, c11 = zero, c20 = zero, c21 = zero,
                           c30 = zero, c31 = zero;
  const __m256i ones = _mm256_set1_epi16(1);
  const size_t stride = static_cast<size_t>(ld);
  for (int q = 0; q < quads; ++q) {
    const __m256i w0 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(b + q * 64));
    const __m256i w1 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(b + q * 64 + 32));
#define ENGRAM_INT8_AVX2_ROW(i)                                                          \
  if constexpr (kRows > i) {                                                             \
    const __m256i sign = _mm256_set1_epi32(static_cast<int>(codes[i * stride + q]));     \
    const __m256i mag = _mm256_set1_epi32(static_cast<int>(magnitudes[i * stride + q])); \
    SignedBytesAccumulate(c##i##0, c##i##1, sign, mag, w0, w1, ones);                    \
  }
    ENGRAM_INT8_AVX2_ROW(0)
    ENGRAM_INT8_AVX2_ROW(1)
    ENGRAM_INT8_AVX2_ROW(2)
    ENGRAM_INT8_AVX2_ROW(3)
#undef ENGRAM_INT8_AVX2_ROW
  }
  __m256i sums[kRows][2];
#define ENGRAM_INT8_SUMS(i) \
  if constexpr (kRows > i) sums[i][0] = c##i##0, sums[i][1] = c##i##1;
  ENGRAM_INT8_SUMS(0)
  ENGRAM_INT8_SUMS(1)
  ENGRAM_INT8_SUMS(2)
  ENGRAM_INT8_SUMS(3)
#undef ENGRAM_INT8_SUMS
  StoreInt8TileAvx2<kRows, 2>(sums, out);
}

__attribute__((target("avx2,fma"))) void GemmPackedInt8Avx2(int m, const float* a, int lda,
                                                            const PackedMatrix& b, float* c,
                                                            int ldc, bool accumulate) {
  if (!b.has_int8()) {
    GemmPackedAvx2(m, a, lda, b, c, ldc, accumulate);
    return;
  }
  thread_local Int8Rows rows;
  QuantizeRowsAvx2(m, a, lda, b.rows(), /*magnitudes=*/true, /*offset_codes=*/false, rows);
  const int quads = rows.quads;
  const int panels = b.cols() / kPanel;
  // The whole depth at once: a panel is at most 1536 / 4 quads x 64 bytes = 24 KB, which stays
  // in L1 while the row tiles stream past it.
  for (int p = 0; p < panels; ++p) {
    for (int r = 0; r < m; r += kRowsPerTileInt8Avx2) {
      const size_t first = static_cast<size_t>(r) * quads;
      const Int8Tile out{rows.scales.data() + r,
                         b.int8_scales() + p * kPanel,
                         b.int8_offsets() + p * kPanel,
                         c + static_cast<size_t>(r) * ldc + p * kPanel,
                         ldc,
                         accumulate};
      const uint32_t* codes = rows.codes.data() + first;
      const uint32_t* mags = rows.magnitudes.data() + first;
      switch (std::min(kRowsPerTileInt8Avx2, m - r)) {
        case 4:
          MicroTileInt8Avx2<4>(quads, codes, mags, quads, b.int8_panel(p), out);
          break;
        case 3:
          MicroTileInt8Avx2<3>(quads, codes, mags, quads, b.int8_panel(p), out);
          break;
        case 2:
          MicroTileInt8Avx2<2>(quads, codes, mags, quads, b.int8_panel(p), out);
          break;
        default:
          MicroTileInt8Avx2<1>(quads, codes, mags, quads, b.int8_panel(p), out);
          break;
      }
    }
  }
}

// AVX-VNNI micro-tile: as the AVX512_VNNI one at 256 bits (A as unsigned code + 128, the
// columns' offsets taken back out), C[kRows x 16] over the whole depth of one panel.
constexpr int kRowsPerTileAvxVnni = 6;  // 12 accumulators + 2 panel vectors + 1 broadcast

// acc += a (unsigned bytes) . b (signed bytes), as _mm256_dpbusd_avx_epi32, written as an asm
// statement with acc tied in and out: with the intrinsic GCC 12 gave each product a fresh register
// and copied it back into the accumulator's, one extra move per product.
__attribute__((target("avx2,avxvnni"))) inline void DotBytesAccumulate(__m256i& acc, __m256i a,
                                                                       __m256i b) {
  asm("%{vex%} vpdpbusd %2, %1, %0" : "+x"(acc) : "x"(a), "x"(b));
}

template <int kRows>
__attribute__((target("avx2,fma,avxvnni"))) void MicroTileInt8AvxVnni(int quads,
                                                                      const uint32_t* codes, int ld,
                                                                      const int8_t* b,
                                                                      const Int8Tile& out) {
  static_assert(kRows >= 1 && kRows <= kRowsPerTileAvxVnni);
  const __m256i zero = _mm256_setzero_si256();
  [[maybe_unused]] __m256i c00 = zero, c01 = zero, c10 = zero, c11 = zero, c20 = zero, c21 = zero,
                           c30 = zero, c31 = zero, c40 = zero, c41 = zero, c50 = zero, c51 = zero;
  const size_t stride = static_cast<size_t>(ld);
  for (int q = 0; q < quads; ++q) {
    const __m256i w0 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(b + q * 64));
    const __m256i w1 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(b + q * 64 + 32));
    // Codes + 128 (QuantizeRowsAvx2 with offset_codes): broadcast straight from memory.
#define ENGRAM_INT8_VNNI_ROW(i)                                                    \
  if constexpr (kRows > i) {                                                       \
    const __m256i av = _mm256_set1_epi32(static_cast<int>(codes[i * stride + q])); \
    DotBytesAccumulate(c##i##0, av, w0);                                           \
    DotBytesAccumulate(c##i##1, av, w1);                                           \
  }
    ENGRAM_INT8_ROWS(ENGRAM_INT8_VNNI_ROW)
#undef ENGRAM_INT8_VNNI_ROW
  }
  const __m256i offset0 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(out.b_offsets));
  const __m256i offset1 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(out.b_offsets + 8));
  __m256i sums[kRows][2];
#define ENGRAM_INT8_VNNI_SUMS(i)                     \
  if constexpr (kRows > i) {                         \
    sums[i][0] = _mm256_sub_epi32(c##i##0, offset0); \
    sums[i][1] = _mm256_sub_epi32(c##i##1, offset1); \
  }
  ENGRAM_INT8_ROWS(ENGRAM_INT8_VNNI_SUMS)
#undef ENGRAM_INT8_VNNI_SUMS
  StoreInt8TileAvx2<kRows, 2>(sums, out);
}

__attribute__((target("avx2,fma,avxvnni"))) void GemmPackedInt8AvxVnni(
    int m, const float* a, int lda, const PackedMatrix& b, float* c, int ldc, bool accumulate) {
  if (!b.has_int8()) {
    GemmPackedAvx2(m, a, lda, b, c, ldc, accumulate);
    return;
  }
  thread_local Int8Rows rows;
  QuantizeRowsAvx2(m, a, lda, b.rows(), /*magnitudes=*/false, /*offset_codes=*/true, rows);
  const int quads = rows.quads;
  const int panels = b.cols() / kPanel;
  for (int p = 0; p < panels; ++p) {
    for (int r = 0; r < m; r += kRowsPerTileAvxVnni) {
      const Int8Tile out{rows.scales.data() + r,
                         b.int8_scales() + p * kPanel,
                         b.int8_offsets() + p * kPanel,
                         c + static_cast<size_t>(r) * ldc + p * kPanel,
                         ldc,
                         accumulate};
      const uint32_t* codes = rows.codes.data() + static_cast<size_t>(r) * quads;
      const int8_t* panel = b.int8_panel(p);
      switch (std::min(kRowsPerTileAvxVnni, m - r)) {
        case 6:
          MicroTileInt8AvxVnni<6>(quads, codes, quads, panel, out);
          break;
        case 5:
          MicroTileInt8AvxVnni<5>(quads, codes, quads, panel, out);
          break;
        case 4:
          MicroTileInt8AvxVnni<4>(quads, codes, quads, panel, out);
          break;
        case 3:
          MicroTileInt8AvxVnni<3>(quads, codes, quads, panel, out);
          break;
        case 2:
          MicroTileInt8AvxVnni<2>(quads, codes, quads, panel, out);
          break;
        default:
          MicroTileInt8AvxVnni<1>(quads, codes, quads, panel, out);
          break;
      }
    }
  }
}

#undef ENGRAM_INT8_ROWS

#endif  // __x86_64__

#if defined(__aarch64__)
// ---------------------------------------------------------------------------------------------
// AArch64 NEON versions: the AVX2 blocking with 4-float vectors, so one packed panel row is four
// registers. NEON is part of every AArch64 CPU (no target attribute); the dot-product extension
// (SDOT) is optional and enabled per function (common/neon_int8.h).

// 6 rows x 4 vectors = 24 accumulators + 4 B vectors of the 32 NEON registers.
constexpr int kRowsPerTileNeon = 6;

float DotNeon(const float* a, const float* b, int n) {
  float32x4_t s0 = vdupq_n_f32(0), s1 = vdupq_n_f32(0), s2 = vdupq_n_f32(0), s3 = vdupq_n_f32(0);
  int i = 0;
  for (; i + 16 <= n; i += 16) {
    s0 = vfmaq_f32(s0, vld1q_f32(a + i), vld1q_f32(b + i));
    s1 = vfmaq_f32(s1, vld1q_f32(a + i + 4), vld1q_f32(b + i + 4));
    s2 = vfmaq_f32(s2, vld1q_f32(a + i + 8), vld1q_f32(b + i + 8));
    s3 = vfmaq_f32(s3, vld1q_f32(a + i + 12), vld1q_f32(b + i + 12));
  }
  for (; i + 4 <= n; i += 4) s0 = vfmaq_f32(s0, vld1q_f32(a + i), vld1q_f32(b + i));
  float sum = vaddvq_f32(vaddq_f32(vaddq_f32(s0, s1), vaddq_f32(s2, s3)));
  for (; i < n; ++i) sum += a[i] * b[i];
  return sum;
}

// C[kRows x 16] (+)= A[kRows x k] * B[k x 16]. B's row kk is at b + kk*ldb.
template <int kRows>
void MicroTileNeon(int k, const float* a, int lda, const float* b, int ldb, float* c, int ldc,
                   bool load_c) {
  float32x4_t acc[kRows][4];
#pragma GCC unroll 6
  for (int r = 0; r < kRows; ++r) {
#pragma GCC unroll 4
    for (int v = 0; v < 4; ++v)
      acc[r][v] = load_c ? vld1q_f32(c + r * ldc + 4 * v) : vdupq_n_f32(0);
  }
  for (int kk = 0; kk < k; ++kk) {
    const float* b_row = b + static_cast<size_t>(kk) * ldb;
    const float32x4_t b0 = vld1q_f32(b_row), b1 = vld1q_f32(b_row + 4);
    const float32x4_t b2 = vld1q_f32(b_row + 8), b3 = vld1q_f32(b_row + 12);
#pragma GCC unroll 6
    for (int r = 0; r < kRows; ++r) {
      const float av = a[r * lda + kk];
      acc[r][0] = vfmaq_n_f32(acc[r][0], b0, av);
      acc[r][1] = vfmaq_n_f32(acc[r][1], b1, av);
      acc[r][2] = vfmaq_n_f32(acc[r][2], b2, av);
      acc[r][3] = vfmaq_n_f32(acc[r][3], b3, av);
    }
  }
#pragma GCC unroll 6
  for (int r = 0; r < kRows; ++r) {
#pragma GCC unroll 4
    for (int v = 0; v < 4; ++v) vst1q_f32(c + r * ldc + 4 * v, acc[r][v]);
  }
}

void MicroTileDispatchNeon(int rows, int k, const float* a, int lda, const float* b, int ldb,
                           float* c, int ldc, bool load_c) {
  static_assert(kRowsPerTileNeon == 6, "one case per row count");
  switch (rows) {
    case 6:
      MicroTileNeon<6>(k, a, lda, b, ldb, c, ldc, load_c);
      break;
    case 5:
      MicroTileNeon<5>(k, a, lda, b, ldb, c, ldc, load_c);
      break;
    case 4:
      MicroTileNeon<4>(k, a, lda, b, ldb, c, ldc, load_c);
      break;
    case 3:
      MicroTileNeon<3>(k, a, lda, b, ldb, c, ldc, load_c);
      break;
    case 2:
      MicroTileNeon<2>(k, a, lda, b, ldb, c, ldc, load_c);
      break;
    case 1:
      MicroTileNeon<1>(k, a, lda, b, ldb, c, ldc, load_c);
      break;
    default:
      break;
  }
}

void GemmNeon(int m, int n, int k, const float* a, int lda, const float* b, int ldb, float* c,
              int ldc, bool accumulate) {
  const int n_tiled = n - n % kPanel;
  for (int j = 0; j < n_tiled; j += kPanel) {
    for (int r = 0; r < m; r += kRowsPerTileNeon) {
      MicroTileDispatchNeon(std::min(kRowsPerTileNeon, m - r), k, a + static_cast<size_t>(r) * lda,
                            lda, b + j, ldb, c + static_cast<size_t>(r) * ldc + j, ldc, accumulate);
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

void GemmPackedNeon(int m, const float* a, int lda, const PackedMatrix& b, float* c, int ldc,
                    bool accumulate) {
  const int depth = b.rows();
  const int panels = b.cols() / kPanel;
  for (int k0 = 0; k0 < depth; k0 += kDepthBlock) {
    const int kc = std::min(kDepthBlock, depth - k0);
    const bool load_c = accumulate || k0 > 0;
    for (int p = 0; p < panels; ++p) {
      const float* panel = b.panel(p) + static_cast<size_t>(k0) * kPanel;
      for (int r = 0; r < m; r += kRowsPerTileNeon) {
        MicroTileDispatchNeon(std::min(kRowsPerTileNeon, m - r), kc,
                              a + static_cast<size_t>(r) * lda + k0, lda, panel, kPanel,
                              c + static_cast<size_t>(r) * ldc + p * kPanel, ldc, load_c);
      }
    }
  }
}

// Writes a finished NEON int8 tile, whose lane i of acc[r][v] is row r's exact sum for column
// 4v+i: ScaleInt8Sum's operations per lane (int32 -> float rounding to nearest, column scale x
// row scale, one fused multiply-add), so C equals the scalar reference's bit for bit.
template <int kRows>
inline void StoreInt8TileNeon(const int32x4_t (&acc)[kRows][4], const Int8Tile& out) {
#pragma GCC unroll 4
  for (int v = 0; v < 4; ++v) {
    const float32x4_t scale = vld1q_f32(out.b_scales + 4 * v);
#pragma GCC unroll 6
    for (int r = 0; r < kRows; ++r) {
      const float32x4_t row_scale = vmulq_f32(scale, vdupq_n_f32(out.a_scales[r]));
      float* c = out.c + static_cast<size_t>(r) * out.ldc + 4 * v;
      const float32x4_t base = out.load_c ? vld1q_f32(c) : vdupq_n_f32(0);
      vst1q_f32(c, vfmaq_f32(base, vcvtq_f32_s32(acc[r][v]), row_scale));
    }
  }
}

// Dot-product micro-tile: C[kRows x 16] over the whole depth of one panel. SDOT multiplies
// signed bytes by signed bytes, so A's codes go in as they are (no +128 offset, no column
// offsets to take back out): lane i of vector v sums column 4v+i's quad against the row's quad,
// exactly in int32.
template <int kRows>
ENGRAM_TARGET_DOTPROD void MicroTileInt8NeonDot(int quads, const uint32_t* codes, int ld,
                                                const int8_t* b, const Int8Tile& out) {
  int32x4_t acc[kRows][4];
#pragma GCC unroll 6
  for (int r = 0; r < kRows; ++r) {
#pragma GCC unroll 4
    for (int v = 0; v < 4; ++v) acc[r][v] = vdupq_n_s32(0);
  }
  for (int q = 0; q < quads; ++q) {
    const int8_t* w = b + static_cast<size_t>(q) * 4 * kPanel;
    const int8x16_t w0 = vld1q_s8(w), w1 = vld1q_s8(w + 16);
    const int8x16_t w2 = vld1q_s8(w + 32), w3 = vld1q_s8(w + 48);
#pragma GCC unroll 6
    for (int r = 0; r < kRows; ++r) {
      const int8x16_t av =
          vreinterpretq_s8_u32(vld1q_dup_u32(codes + static_cast<size_t>(r) * ld + q));
      acc[r][0] = DotAccumulate(acc[r][0], w0, av);
      acc[r][1] = DotAccumulate(acc[r][1], w1, av);
      acc[r][2] = DotAccumulate(acc[r][2], w2, av);
      acc[r][3] = DotAccumulate(acc[r][3], w3, av);
    }
  }
  StoreInt8TileNeon<kRows>(acc, out);
}

// The NEON int8 kernels' loop: A quantised by the scalar quantiser (the same codes and scales as
// every other int8 table by construction), then for each panel every tile of up to
// kRowsPerTileNeon rows over the whole depth, as the AVX2 kernel does (a panel, <= 24 KB, stays
// in L1 while the row tiles stream past it). `tile(rows, quads, codes, panel, out)` runs the
// micro-tile instance for `rows` (a std::integral_constant) rows.
template <typename TileFn>
inline void GemmPackedInt8NeonTiles(int m, const float* a, int lda, const PackedMatrix& b, float* c,
                                    int ldc, bool accumulate, TileFn&& tile) {
  thread_local Int8Rows rows;
  QuantizeRowsScalar(m, a, lda, b.rows(), rows);
  const int quads = rows.quads;
  const int panels = b.cols() / kPanel;
  static_assert(kRowsPerTileNeon == 6, "one case per row count");
  for (int p = 0; p < panels; ++p) {
    for (int r = 0; r < m; r += kRowsPerTileNeon) {
      const Int8Tile out{rows.scales.data() + r,
                         b.int8_scales() + p * kPanel,
                         b.int8_offsets() + p * kPanel,
                         c + static_cast<size_t>(r) * ldc + p * kPanel,
                         ldc,
                         accumulate};
      const uint32_t* codes = rows.codes.data() + static_cast<size_t>(r) * quads;
      const int8_t* panel = b.int8_panel(p);
      switch (std::min(kRowsPerTileNeon, m - r)) {
        case 6:
          tile(std::integral_constant<int, 6>{}, quads, codes, panel, out);
          break;
        case 5:
          tile(std::integral_constant<int, 5>{}, quads, codes, panel, out);
          break;
        case 4:
          tile(std::integral_constant<int, 4>{}, quads, codes, panel, out);
          break;
        case 3:
          tile(std::integral_constant<int, 3>{}, quads, codes, panel, out);
          break;
        case 2:
          tile(std::integral_constant<int, 2>{}, quads, codes, panel, out);
          break;
        default:
          tile(std::integral_constant<int, 1>{}, quads, codes, panel, out);
          break;
      }
    }
  }
}

ENGRAM_TARGET_DOTPROD void GemmPackedInt8NeonDot(int m, const float* a, int lda,
                                                 const PackedMatrix& b, float* c, int ldc,
                                                 bool accumulate) {
  if (!b.has_int8()) {
    GemmPackedNeon(m, a, lda, b, c, ldc, accumulate);
    return;
  }
  GemmPackedInt8NeonTiles(
      m, a, lda, b, c, ldc, accumulate,
      [](auto rows, int quads, const uint32_t* codes, const int8_t* panel, const Int8Tile& out) {
        MicroTileInt8NeonDot<decltype(rows)::value>(quads, codes, quads, panel, out);
      });
}

// Widening micro-tile, for CPUs without the dot-product extension (Cortex-A72, Graviton 1,
// Raspberry Pi 4): the dot-product tile with MullAccumulate (four instructions per 16 byte
// products instead of one SDOT, the same exact int32 sums in the same lanes, one accumulator per
// vector).
template <int kRows>
void MicroTileInt8NeonMull(int quads, const uint32_t* codes, int ld, const int8_t* b,
                           const Int8Tile& out) {
  int32x4_t acc[kRows][4];
#pragma GCC unroll 6
  for (int r = 0; r < kRows; ++r) {
#pragma GCC unroll 4
    for (int v = 0; v < 4; ++v) acc[r][v] = vdupq_n_s32(0);
  }
  for (int q = 0; q < quads; ++q) {
    const int8_t* w = b + static_cast<size_t>(q) * 4 * kPanel;
    const int8x16_t w0 = vld1q_s8(w), w1 = vld1q_s8(w + 16);
    const int8x16_t w2 = vld1q_s8(w + 32), w3 = vld1q_s8(w + 48);
#pragma GCC unroll 6
    for (int r = 0; r < kRows; ++r) {
      const int8x16_t av =
          vreinterpretq_s8_u32(vld1q_dup_u32(codes + static_cast<size_t>(r) * ld + q));
      acc[r][0] = MullAccumulate(acc[r][0], w0, av);
      acc[r][1] = MullAccumulate(acc[r][1], w1, av);
      acc[r][2] = MullAccumulate(acc[r][2], w2, av);
      acc[r][3] = MullAccumulate(acc[r][3], w3, av);
    }
  }
  StoreInt8TileNeon<kRows>(acc, out);
}

void GemmPackedInt8NeonMull(int m, const float* a, int lda, const PackedMatrix& b, float* c,
                            int ldc, bool accumulate) {
  if (!b.has_int8()) {
    GemmPackedNeon(m, a, lda, b, c, ldc, accumulate);
    return;
  }
  GemmPackedInt8NeonTiles(
      m, a, lda, b, c, ldc, accumulate,
      [](auto rows, int quads, const uint32_t* codes, const int8_t* panel, const Int8Tile& out) {
        MicroTileInt8NeonMull<decltype(rows)::value>(quads, codes, quads, panel, out);
      });
}

constexpr KernelTable kNeonTable{KernelIsa::kNeon, KernelPrecision::kFloat32, DotNeon, GemmNeon,
                                 GemmPackedNeon};
constexpr KernelTable kNeonInt8Table{KernelIsa::kNeonInt8, KernelPrecision::kInt8, DotNeon,
                                     GemmNeon, GemmPackedInt8NeonDot};
constexpr KernelTable kNeonMullInt8Table{KernelIsa::kNeonInt8Mull, KernelPrecision::kInt8, DotNeon,
                                         GemmNeon, GemmPackedInt8NeonMull};
#endif  // __aarch64__

constexpr KernelTable kScalarTable{KernelIsa::kScalar, KernelPrecision::kFloat32, DotScalar,
                                   GemmScalar, GemmPackedScalar};
constexpr KernelTable kScalarInt8Table{KernelIsa::kScalarInt8, KernelPrecision::kInt8, DotScalar,
                                       GemmScalar, GemmPackedInt8Scalar};
#if defined(__x86_64__)
constexpr KernelTable kAvx2Table{KernelIsa::kAvx2, KernelPrecision::kFloat32, DotAvx2, GemmAvx2,
                                 GemmPackedAvx2};
constexpr KernelTable kAvx512Table{KernelIsa::kAvx512, KernelPrecision::kFloat32, DotAvx512,
                                   GemmAvx512, GemmPackedAvx512};
constexpr KernelTable kAvx512Bf16Table{KernelIsa::kAvx512Bf16, KernelPrecision::kBf16, DotAvx512,
                                       GemmAvx512, GemmPackedBf16};
constexpr KernelTable kAvx512Int8Table{KernelIsa::kAvx512Int8, KernelPrecision::kInt8, DotAvx512,
                                       GemmAvx512, GemmPackedInt8};
constexpr KernelTable kAvx2Int8Table{KernelIsa::kAvx2Int8, KernelPrecision::kInt8, DotAvx2,
                                     GemmAvx2, GemmPackedInt8Avx2};
constexpr KernelTable kAvxVnniInt8Table{KernelIsa::kAvxVnniInt8, KernelPrecision::kInt8, DotAvx2,
                                        GemmAvx2, GemmPackedInt8AvxVnni};
#endif  // __x86_64__

}  // namespace

uint16_t FloatToBf16(float f) {
  uint32_t u;
  std::memcpy(&u, &f, sizeof(u));
  if ((u & 0x7F800000u) == 0x7F800000u) return static_cast<uint16_t>(u >> 16);  // inf / nan
  u += 0x7FFFu + ((u >> 16) & 1u);
  return static_cast<uint16_t>(u >> 16);
}

PackedMatrix PackedMatrix::Pack(const float* row_major, int rows, int cols, bool bf16) {
  PackedMatrix m;
  m.rows_ = rows;
  m.cols_ = cols;
  m.data_.resize(static_cast<size_t>(rows) * cols);
  const int panels = cols / kPanelWidth;
  for (int p = 0; p < panels; ++p) {
    float* dst = m.data_.data() + static_cast<size_t>(p) * rows * kPanelWidth;
    for (int r = 0; r < rows; ++r) {
      const float* src = row_major + static_cast<size_t>(r) * cols + p * kPanelWidth;
      std::copy(src, src + kPanelWidth, dst + static_cast<size_t>(r) * kPanelWidth);
    }
  }
  if (bf16) m.AddBf16();
  return m;
}

void PackedMatrix::AddBf16() {
  const int pairs = (rows_ + 1) / 2;
  const int panels = cols_ / kPanelWidth;
  bf16_.assign(static_cast<size_t>(panels) * pairs * 2 * kPanelWidth, 0);
  for (int p = 0; p < panels; ++p) {
    const float* src = panel(p);
    uint16_t* dst = bf16_.data() + static_cast<size_t>(p) * pairs * 2 * kPanelWidth;
    for (int r = 0; r < rows_; ++r) {
      for (int col = 0; col < kPanelWidth; ++col) {
        dst[static_cast<size_t>(r / 2) * 2 * kPanelWidth + 2 * col + (r % 2)] =
            FloatToBf16(src[static_cast<size_t>(r) * kPanelWidth + col]);
      }
    }
  }
}

void PackedMatrix::AddInt8() {
  const int quads = (rows_ + 3) / 4;
  const int panels = cols_ / kPanelWidth;
  int8_.assign(static_cast<size_t>(panels) * quads * 4 * kPanelWidth, 0);
  int8_scales_.assign(static_cast<size_t>(cols_), 0.0f);
  int8_offsets_.assign(static_cast<size_t>(cols_), 0);
  for (int p = 0; p < panels; ++p) {
    const float* src = panel(p);
    int8_t* dst = int8_.data() + static_cast<size_t>(p) * quads * 4 * kPanelWidth;
    for (int col = 0; col < kPanelWidth; ++col) {
      float max_abs = 0;
      for (int r = 0; r < rows_; ++r) {
        max_abs = std::max(max_abs, std::fabs(src[static_cast<size_t>(r) * kPanelWidth + col]));
      }
      const float inv = max_abs > 0 ? 127.0f / max_abs : 0.0f;
      int32_t sum = 0;
      for (int r = 0; r < rows_; ++r) {
        const float w = src[static_cast<size_t>(r) * kPanelWidth + col];
        const int code = std::clamp(static_cast<int>(std::nearbyint(w * inv)), -127, 127);
        dst[static_cast<size_t>(r / 4) * 4 * kPanelWidth + 4 * col + (r % 4)] =
            static_cast<int8_t>(code);
        sum += code;
      }
      int8_scales_[p * kPanelWidth + col] = max_abs / 127.0f;
      int8_offsets_[p * kPanelWidth + col] = 128 * sum;
    }
  }
}

const KernelTable& ScalarKernels() { return kScalarTable; }

const KernelTable& ScalarInt8Kernels() { return kScalarInt8Table; }

#if defined(__x86_64__)
const KernelTable* Avx2Kernels() {
  static const KernelTable* table = [] {
    __builtin_cpu_init();
    const bool ok = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
    return ok ? &kAvx2Table : nullptr;
  }();
  return table;
}

const KernelTable* Avx512Kernels() {
  static const KernelTable* table = [] {
    __builtin_cpu_init();
    return __builtin_cpu_supports("avx512f") ? &kAvx512Table : nullptr;
  }();
  return table;
}

const KernelTable* Avx512Bf16Kernels() {
  static const KernelTable* table = [] {
    __builtin_cpu_init();
    return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bf16")
               ? &kAvx512Bf16Table
               : nullptr;
  }();
  return table;
}

const KernelTable* Avx512Int8Kernels() {
  static const KernelTable* table = [] {
    __builtin_cpu_init();
    return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
                   __builtin_cpu_supports("avx512vnni")
               ? &kAvx512Int8Table
               : nullptr;
  }();
  return table;
}

const KernelTable* Avx2Int8Kernels() {
  return Avx2Kernels() != nullptr ? &kAvx2Int8Table : nullptr;
}

const KernelTable* AvxVnniInt8Kernels() {
  static const KernelTable* table = [] {
    __builtin_cpu_init();
    return Avx2Kernels() != nullptr && __builtin_cpu_supports("avxvnni") ? &kAvxVnniInt8Table
                                                                         : nullptr;
  }();
  return table;
}
#else
// Not x86-64: none of the x86 tables exist.
const KernelTable* Avx2Kernels() { return nullptr; }
const KernelTable* Avx512Kernels() { return nullptr; }
const KernelTable* Avx512Bf16Kernels() { return nullptr; }
const KernelTable* Avx512Int8Kernels() { return nullptr; }
const KernelTable* Avx2Int8Kernels() { return nullptr; }
const KernelTable* AvxVnniInt8Kernels() { return nullptr; }
#endif  // __x86_64__

#if defined(__aarch64__)
const KernelTable* NeonKernels() { return &kNeonTable; }

const KernelTable* NeonInt8Kernels() { return CpuHasArmDotProduct() ? &kNeonInt8Table : nullptr; }

const KernelTable* NeonMullInt8Kernels() { return &kNeonMullInt8Table; }
#else
const KernelTable* NeonKernels() { return nullptr; }
const KernelTable* NeonInt8Kernels() { return nullptr; }
const KernelTable* NeonMullInt8Kernels() { return nullptr; }
#endif  // __aarch64__

Result<KernelFamilyTables> TablesOfKernelFamily(KernelFamily family) {
  if (Status runs = CheckCpuRunsKernelFamily(family); !runs.ok()) return runs;
  KernelFamilyTables t;
  switch (family) {
    case KernelFamily::kScalar:
      t.fp32 = &kScalarTable;
      t.int8 = &kScalarInt8Table;
      break;
    // The accessors, not the tables: only the build's architecture has them, and the CPU
    // check above makes every one non-null here.
    case KernelFamily::kAvx2:
      t.fp32 = Avx2Kernels();
      t.int8 = Avx2Int8Kernels();
      break;
    case KernelFamily::kAvxVnni:
      t.fp32 = Avx2Kernels();
      t.int8 = AvxVnniInt8Kernels();
      break;
    case KernelFamily::kAvx512:
      t.fp32 = Avx512Kernels();
      t.bf16 = Avx512Bf16Kernels();
      t.int8 = Avx512Int8Kernels() != nullptr    ? Avx512Int8Kernels()
               : AvxVnniInt8Kernels() != nullptr ? AvxVnniInt8Kernels()
                                                 : Avx2Int8Kernels();
      break;
    case KernelFamily::kNeon:
      t.fp32 = NeonKernels();
      t.int8 = NeonInt8Kernels() != nullptr ? NeonInt8Kernels() : NeonMullInt8Kernels();
      break;
  }
  return t;
}

const KernelTable& Kernels() {
  static const KernelTable& table = *TablesOfKernelFamily(SelectedKernelFamily())->fp32;
  return table;
}

float Cosine(const float* a, const float* b, int dim) {
  const KernelTable& k = Kernels();
  const float norms = std::sqrt(k.dot(a, a, dim)) * std::sqrt(k.dot(b, b, dim));
  if (norms == 0.0f) return 0.0f;
  return k.dot(a, b, dim) / norms;
}

}  // namespace engram
