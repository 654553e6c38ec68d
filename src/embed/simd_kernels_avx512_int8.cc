// The AVX512_VNNI int8 packed products (see simd_kernels_internal.h), compiled with per-function
// target attributes: only the table whose CPU check passed calls them.
#if defined(__x86_64__)
#include <immintrin.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

#include "embed/simd_kernels_internal.h"

namespace engram {
namespace simd_internal {
namespace {

// Depth of one pass of the int8 kernel over a panel pair, in quads of rows: 128 x 64 bytes = 8 KB
// per panel.
constexpr int kInt8DepthBlock = 128;

// GCC 12 reports the AVX-512 intrinsics' deliberately undefined pass-through operands
// (_mm512_undefined_*) as uninitialised once they are inlined here; they are never read.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"

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

}  // namespace

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

#pragma GCC diagnostic pop

}  // namespace simd_internal
}  // namespace engram

#endif  // __x86_64__
