#include "index/int8_vectors.h"

#if defined(__x86_64__)
#include <immintrin.h>
#endif
#if defined(__aarch64__)
#include <arm_neon.h>
#endif

#include <algorithm>
#include <cmath>

#include "common/kernel_family.h"
#include "common/neon_int8.h"

namespace engram {

float QuantizeInt8(const float* x, int dim, int8_t* code) {
  float max_abs = 0;
  for (int i = 0; i < dim; ++i) max_abs = std::max(max_abs, std::fabs(x[i]));
  if (max_abs == 0) {
    std::fill(code, code + dim, int8_t{0});
    return 0;
  }
  float inv = 127.0f / max_abs;
  for (int i = 0; i < dim; ++i) {
    code[i] = static_cast<int8_t>(std::lround(std::clamp(x[i] * inv, -127.0f, 127.0f)));
  }
  return max_abs / 127.0f;
}

int32_t DotInt8Scalar(const int8_t* a, const int8_t* b, int dim) {
  int32_t s = 0;
  for (int i = 0; i < dim; ++i) s += static_cast<int32_t>(a[i]) * b[i];
  return s;
}

namespace {

// The tail past the last whole block, in scalar code.
inline int32_t TailDot(const int8_t* query, const int8_t* c, int body, int dim) {
  int32_t total = 0;
  for (int t = body; t < dim; ++t) total += static_cast<int32_t>(query[t]) * c[t];
  return total;
}

#if defined(__x86_64__)
__attribute__((target("avx2"))) int32_t DotInt8Avx2(const int8_t* a, const int8_t* b, int dim) {
  // maddubs multiplies unsigned by signed bytes: feed |a| and b carrying a's sign. Codes are within
  // [-127, 127], so a pair sum is at most 2*127*127 = 32258 and never saturates int16.
  __m256i acc = _mm256_setzero_si256();
  const __m256i ones = _mm256_set1_epi16(1);
  int i = 0;
  for (; i + 32 <= dim; i += 32) {
    __m256i va = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(a + i));
    __m256i vb = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(b + i));
    __m256i abs_a = _mm256_sign_epi8(va, va);
    __m256i sb = _mm256_sign_epi8(vb, va);
    __m256i prod16 = _mm256_maddubs_epi16(abs_a, sb);
    acc = _mm256_add_epi32(acc, _mm256_madd_epi16(prod16, ones));
  }
  __m128i lo = _mm256_castsi256_si128(acc);
  __m128i hi = _mm256_extracti128_si256(acc, 1);
  __m128i s = _mm_add_epi32(lo, hi);
  s = _mm_hadd_epi32(s, s);
  s = _mm_hadd_epi32(s, s);
  int32_t total = _mm_cvtsi128_si32(s);
  for (; i < dim; ++i) total += static_cast<int32_t>(a[i]) * b[i];
  return total;
}

// (q + 128) · c = q · c + 128 · Σc: the query's bytes, offset to unsigned by flipping their top
// bit, go into vpdpbusd as they are and each code needs no per-block sign fix-up; its sum takes
// the offset back out. A dimension beyond the last whole 64 bytes is added in scalar code.
__attribute__((target("avx512f,avx512bw,avx512vnni"))) void DotInt8ManySummedVnni(
    const int8_t* query, const int8_t* codes, const int32_t* sums, int dim, size_t n,
    int32_t* out) {
  const int blocks = dim / 64;
  const int tail = dim - blocks * 64;
  constexpr int kMaxBlocks = 32;
  if (blocks > kMaxBlocks) {
    for (size_t i = 0; i < n; ++i) out[i] = DotInt8Scalar(query, codes + i * dim, dim);
    return;
  }
  __m512i shifted_q[kMaxBlocks];
  const __m512i top_bit = _mm512_set1_epi8(static_cast<char>(0x80));
  for (int b = 0; b < blocks; ++b) {
    shifted_q[b] = _mm512_xor_si512(_mm512_loadu_si512(query + b * 64), top_bit);
  }
  for (size_t i = 0; i < n; ++i) {
    const int8_t* c = codes + i * static_cast<size_t>(dim);
    __m512i acc = _mm512_setzero_si512();
    for (int b = 0; b < blocks; ++b) {
      acc = _mm512_dpbusd_epi32(acc, shifted_q[b], _mm512_loadu_si512(c + b * 64));
    }
    int32_t body_sum = sums[i];
    int32_t total = 0;
    for (int t = 0; t < tail; ++t) {
      const int32_t v = c[blocks * 64 + t];
      body_sum -= v;
      total += static_cast<int32_t>(query[blocks * 64 + t]) * v;
    }
    out[i] = total + _mm512_reduce_add_epi32(acc) - 128 * body_sum;
  }
}

__attribute__((target("avx2"))) inline int32_t SumLanes(__m256i v) {
  __m128i s = _mm_add_epi32(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1));
  s = _mm_hadd_epi32(s, s);
  s = _mm_hadd_epi32(s, s);
  return _mm_cvtsi128_si32(s);
}

// Four codes per step share each block of the query, and their four sums are independent chains
// (one code's 16 dependent accumulations would wait on the instruction's latency).
constexpr int kMaxBlocks256 = 64;  // dimensions up to 2,048 keep the query's blocks on the stack

// A code's exact dot product from its vector sums of (query + 128) . code over the first `body`
// bytes: the shift comes back out as 128 x the code's sum there, the tail runs in scalar code.
__attribute__((target("avx2"))) inline int32_t FinishSummed(const int8_t* query, const int8_t* c,
                                                            int32_t code_sum, int body, int dim,
                                                            __m256i acc) {
  int32_t total = 0;
  for (int t = body; t < dim; ++t) {
    code_sum -= c[t];
    total += static_cast<int32_t>(query[t]) * c[t];
  }
  return total + SumLanes(acc) - 128 * code_sum;
}

// acc + the int32 quad sums of |q| . (c with q's signs) over one 32-byte block.
__attribute__((target("avx2"))) inline __m256i SignedBlockAccumulate(__m256i acc, __m256i q,
                                                                     __m256i mag, __m256i ones,
                                                                     const int8_t* at) {
  const __m256i c = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(at));
  return _mm256_add_epi32(
      acc, _mm256_madd_epi16(_mm256_maddubs_epi16(mag, _mm256_sign_epi8(c, q)), ones));
}

// AVX-VNNI: the AVX-512 VNNI scan at 256 bits (query + 128, the codes' sums take it back out).
__attribute__((target("avx2,avxvnni"))) void DotInt8ManySummedAvxVnni(const int8_t* query,
                                                                      const int8_t* codes,
                                                                      const int32_t* sums, int dim,
                                                                      size_t n, int32_t* out) {
  const int blocks = dim / 32;
  if (blocks > kMaxBlocks256) {
    for (size_t i = 0; i < n; ++i) out[i] = DotInt8Scalar(query, codes + i * dim, dim);
    return;
  }
  const int body = blocks * 32;
  __m256i shifted_q[kMaxBlocks256];
  const __m256i top_bit = _mm256_set1_epi8(static_cast<char>(0x80));
  for (int b = 0; b < blocks; ++b) {
    shifted_q[b] = _mm256_xor_si256(
        _mm256_loadu_si256(reinterpret_cast<const __m256i*>(query + b * 32)), top_bit);
  }
  const size_t stride = static_cast<size_t>(dim);

  size_t i = 0;
  for (; i + 4 <= n; i += 4) {
    const int8_t* c = codes + i * stride;
    __m256i a0 = _mm256_setzero_si256(), a1 = a0, a2 = a0, a3 = a0;
    for (int b = 0; b < blocks; ++b) {
      const int8_t* at = c + b * 32;
      a0 = _mm256_dpbusd_avx_epi32(a0, shifted_q[b],
                                   _mm256_loadu_si256(reinterpret_cast<const __m256i*>(at)));
      a1 = _mm256_dpbusd_avx_epi32(
          a1, shifted_q[b], _mm256_loadu_si256(reinterpret_cast<const __m256i*>(at + stride)));
      a2 = _mm256_dpbusd_avx_epi32(
          a2, shifted_q[b], _mm256_loadu_si256(reinterpret_cast<const __m256i*>(at + 2 * stride)));
      a3 = _mm256_dpbusd_avx_epi32(
          a3, shifted_q[b], _mm256_loadu_si256(reinterpret_cast<const __m256i*>(at + 3 * stride)));
    }
    out[i] = FinishSummed(query, c, sums[i], body, dim, a0);
    out[i + 1] = FinishSummed(query, c + stride, sums[i + 1], body, dim, a1);
    out[i + 2] = FinishSummed(query, c + 2 * stride, sums[i + 2], body, dim, a2);
    out[i + 3] = FinishSummed(query, c + 3 * stride, sums[i + 3], body, dim, a3);
  }
  for (; i < n; ++i) {
    const int8_t* c = codes + i * stride;
    __m256i acc = _mm256_setzero_si256();
    for (int b = 0; b < blocks; ++b) {
      acc = _mm256_dpbusd_avx_epi32(
          acc, shifted_q[b], _mm256_loadu_si256(reinterpret_cast<const __m256i*>(c + b * 32)));
    }
    out[i] = FinishSummed(query, c, sums[i], body, dim, acc);
  }
}

// AVX2: |q| times each code carrying q's signs (see DotInt8Avx2), the query's blocks and their
// magnitudes prepared once for the whole scan. The codes' sums are not needed.
__attribute__((target("avx2"))) void DotInt8ManySummedAvx2(const int8_t* query, const int8_t* codes,
                                                           const int32_t*, int dim, size_t n,
                                                           int32_t* out) {
  const int blocks = dim / 32;
  if (blocks > kMaxBlocks256) {
    for (size_t i = 0; i < n; ++i) out[i] = DotInt8Scalar(query, codes + i * dim, dim);
    return;
  }
  const int body = blocks * 32;
  __m256i q[kMaxBlocks256], mag[kMaxBlocks256];
  for (int b = 0; b < blocks; ++b) {
    q[b] = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(query + b * 32));
    mag[b] = _mm256_sign_epi8(q[b], q[b]);
  }
  const __m256i ones = _mm256_set1_epi16(1);
  const size_t stride = static_cast<size_t>(dim);
  size_t i = 0;
  for (; i + 4 <= n; i += 4) {
    const int8_t* c = codes + i * stride;
    __m256i a0 = _mm256_setzero_si256(), a1 = a0, a2 = a0, a3 = a0;
    for (int b = 0; b < blocks; ++b) {
      const int8_t* at = c + b * 32;
      a0 = SignedBlockAccumulate(a0, q[b], mag[b], ones, at);
      a1 = SignedBlockAccumulate(a1, q[b], mag[b], ones, at + stride);
      a2 = SignedBlockAccumulate(a2, q[b], mag[b], ones, at + 2 * stride);
      a3 = SignedBlockAccumulate(a3, q[b], mag[b], ones, at + 3 * stride);
    }
    out[i] = SumLanes(a0) + TailDot(query, c, body, dim);
    out[i + 1] = SumLanes(a1) + TailDot(query, c + stride, body, dim);
    out[i + 2] = SumLanes(a2) + TailDot(query, c + 2 * stride, body, dim);
    out[i + 3] = SumLanes(a3) + TailDot(query, c + 3 * stride, body, dim);
  }
  for (; i < n; ++i) {
    const int8_t* c = codes + i * stride;
    __m256i acc = _mm256_setzero_si256();
    for (int b = 0; b < blocks; ++b) {
      acc = SignedBlockAccumulate(acc, q[b], mag[b], ones, c + b * 32);
    }
    out[i] = SumLanes(acc) + TailDot(query, c, body, dim);
  }
}
#endif  // __x86_64__

#if defined(__aarch64__)
// The NEON versions, `Step` being SdotStep (the dot-product extension) or MullStep (widening
// multiplies, every AArch64 CPU): acc + the int32 sums of 16 byte products, four to a lane. Both
// multiply signed by signed bytes, so the query needs neither the VNNI scans' +128 shift nor
// AVX2's sign transfer, and the codes' sums are not needed.
struct SdotStep {
  ENGRAM_TARGET_DOTPROD static int32x4_t Accumulate(int32x4_t acc, int8x16_t a, int8x16_t b) {
    return DotAccumulate(acc, a, b);
  }
};
struct MullStep {
  static int32x4_t Accumulate(int32x4_t acc, int8x16_t a, int8x16_t b) {
    return MullAccumulate(acc, a, b);
  }
};

// One code: two independent accumulators per 32 bytes, then one more block of 16, the rest in
// scalar code.
template <typename Step>
[[gnu::always_inline]] inline int32_t DotInt8NeonWith(const int8_t* a, const int8_t* b, int dim) {
  int32x4_t acc0 = vdupq_n_s32(0), acc1 = acc0;
  int i = 0;
  for (; i + 32 <= dim; i += 32) {
    acc0 = Step::Accumulate(acc0, vld1q_s8(a + i), vld1q_s8(b + i));
    acc1 = Step::Accumulate(acc1, vld1q_s8(a + i + 16), vld1q_s8(b + i + 16));
  }
  if (i + 16 <= dim) {
    acc0 = Step::Accumulate(acc0, vld1q_s8(a + i), vld1q_s8(b + i));
    i += 16;
  }
  return vaddvq_s32(vaddq_s32(acc0, acc1)) + TailDot(a, b, i, dim);
}

// The scan: as the AVX2 one, four codes per step share each 16-byte block of the query (one load
// for the four; the whole query stays in L1) and their sums are independent chains. Codes left
// after the last four run through the one-code version.
template <typename Step>
[[gnu::always_inline]] inline void DotInt8ManyNeonWith(const int8_t* query, const int8_t* codes,
                                                       int dim, size_t n, int32_t* out) {
  const int body = dim / 16 * 16;
  const size_t stride = static_cast<size_t>(dim);
  size_t i = 0;
  for (; i + 4 <= n; i += 4) {
    const int8_t* c = codes + i * stride;
    int32x4_t a0 = vdupq_n_s32(0), a1 = a0, a2 = a0, a3 = a0;
    for (int b = 0; b < body; b += 16) {
      const int8x16_t q = vld1q_s8(query + b);
      a0 = Step::Accumulate(a0, q, vld1q_s8(c + b));
      a1 = Step::Accumulate(a1, q, vld1q_s8(c + stride + b));
      a2 = Step::Accumulate(a2, q, vld1q_s8(c + 2 * stride + b));
      a3 = Step::Accumulate(a3, q, vld1q_s8(c + 3 * stride + b));
    }
    out[i] = vaddvq_s32(a0) + TailDot(query, c, body, dim);
    out[i + 1] = vaddvq_s32(a1) + TailDot(query, c + stride, body, dim);
    out[i + 2] = vaddvq_s32(a2) + TailDot(query, c + 2 * stride, body, dim);
    out[i + 3] = vaddvq_s32(a3) + TailDot(query, c + 3 * stride, body, dim);
  }
  for (; i < n; ++i) out[i] = DotInt8NeonWith<Step>(query, codes + i * stride, dim);
}

ENGRAM_TARGET_DOTPROD int32_t DotInt8NeonDot(const int8_t* a, const int8_t* b, int dim) {
  return DotInt8NeonWith<SdotStep>(a, b, dim);
}

int32_t DotInt8NeonMull(const int8_t* a, const int8_t* b, int dim) {
  return DotInt8NeonWith<MullStep>(a, b, dim);
}

ENGRAM_TARGET_DOTPROD void DotInt8ManySummedNeonDot(const int8_t* query, const int8_t* codes,
                                                    const int32_t*, int dim, size_t n,
                                                    int32_t* out) {
  DotInt8ManyNeonWith<SdotStep>(query, codes, dim, n, out);
}

void DotInt8ManySummedNeonMull(const int8_t* query, const int8_t* codes, const int32_t*, int dim,
                               size_t n, int32_t* out) {
  DotInt8ManyNeonWith<MullStep>(query, codes, dim, n, out);
}
#endif  // __aarch64__

void DotInt8ManyEach(const int8_t* query, const int8_t* codes, int dim, size_t n, int32_t* out) {
  for (size_t i = 0; i < n; ++i) out[i] = DotInt8(query, codes + i * static_cast<size_t>(dim), dim);
}

void DotInt8ManySummedPortable(const int8_t* query, const int8_t* codes, const int32_t*, int dim,
                               size_t n, int32_t* out) {
  DotInt8ManyEach(query, codes, dim, n, out);
}

}  // namespace

Int8ScanFn Int8ScanOfFamily(KernelFamily family) {
  if (!CpuSupportsKernelFamily(family)) return nullptr;
#if defined(__x86_64__)
  __builtin_cpu_init();
  const bool vnni512 = __builtin_cpu_supports("avx512vnni") && __builtin_cpu_supports("avx512bw");
  const bool vnni256 = CpuSupportsKernelFamily(KernelFamily::kAvxVnni);
  switch (family) {
    case KernelFamily::kAvx512:
      return vnni512   ? DotInt8ManySummedVnni
             : vnni256 ? DotInt8ManySummedAvxVnni
                       : DotInt8ManySummedAvx2;
    case KernelFamily::kAvxVnni:
      return DotInt8ManySummedAvxVnni;
    case KernelFamily::kAvx2:
      return DotInt8ManySummedAvx2;
    default:
      return DotInt8ManySummedPortable;
  }
#elif defined(__aarch64__)
  if (family != KernelFamily::kNeon) return DotInt8ManySummedPortable;
  return CpuHasArmDotProduct() ? DotInt8ManySummedNeonDot : DotInt8ManySummedNeonMull;
#else
  return DotInt8ManySummedPortable;
#endif
}

Int8ScanFn NeonMullInt8Scan() {
#if defined(__aarch64__)
  return DotInt8ManySummedNeonMull;
#else
  return nullptr;
#endif
}

namespace {

using DotFn = int32_t (*)(const int8_t*, const int8_t*, int);

DotFn PickDot() {
#if defined(__x86_64__)
  __builtin_cpu_init();
  return SelectedKernelFamily() == KernelFamily::kScalar || !__builtin_cpu_supports("avx2")
             ? DotInt8Scalar
             : DotInt8Avx2;
#elif defined(__aarch64__)
  if (SelectedKernelFamily() == KernelFamily::kScalar) return DotInt8Scalar;
  return CpuHasArmDotProduct() ? DotInt8NeonDot : DotInt8NeonMull;
#else
  return DotInt8Scalar;
#endif
}

}  // namespace

int32_t DotInt8(const int8_t* a, const int8_t* b, int dim) {
  static const DotFn fn = PickDot();
  return fn(a, b, dim);
}

void DotInt8Many(const int8_t* query, const int8_t* codes, int dim, size_t n, int32_t* out) {
  // One VNNI kernel serves both: the codes' sums are taken here, a block at a time.
  constexpr size_t kBlock = 256;
  int32_t sums[kBlock];
  for (size_t begin = 0; begin < n; begin += kBlock) {
    const size_t m = std::min(kBlock, n - begin);
    const int8_t* block = codes + begin * static_cast<size_t>(dim);
    for (size_t i = 0; i < m; ++i) sums[i] = CodeSum(block + i * static_cast<size_t>(dim), dim);
    DotInt8ManySummed(query, block, sums, dim, m, out + begin);
  }
}

int32_t CodeSum(const int8_t* code, int dim) {
  int32_t s = 0;
  for (int i = 0; i < dim; ++i) s += code[i];
  return s;
}

void DotInt8ManySummed(const int8_t* query, const int8_t* codes, const int32_t* sums, int dim,
                       size_t n, int32_t* out) {
  // The scan follows the process's kernel family, so forcing a smaller family runs the model and
  // the scan of that family together.
  static const Int8ScanFn fn = Int8ScanOfFamily(SelectedKernelFamily());
  fn(query, codes, sums, dim, n, out);
}

}  // namespace engram
