// The int8 packed products on AVX2 and on AVX-VNNI (see simd_kernels_internal.h), which share
// the AVX2 quantiser and tile store; compiled with per-function target attributes: only the
// tables whose CPU check passed call them.
#if defined(__x86_64__)
#include <immintrin.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdlib>

#include "embed/simd_kernels_internal.h"

namespace engram {
namespace simd_internal {
namespace {

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

}  // namespace

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

namespace {

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

}  // namespace

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

}  // namespace simd_internal
}  // namespace engram

#endif  // __x86_64__
