// The AArch64 NEON kernels: float32, and int8 with and without the dot-product extension (see
// simd_kernels_internal.h).
#if defined(__aarch64__)
#include <arm_neon.h>

#include <algorithm>
#include <cstdint>
#include <type_traits>

#include "common/neon_int8.h"
#include "embed/simd_kernels_internal.h"

namespace engram {
namespace simd_internal {

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

namespace {

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

}  // namespace

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

namespace {

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

}  // namespace

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

namespace {

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

}  // namespace

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

}  // namespace simd_internal
}  // namespace engram

#endif  // __aarch64__
