#include "index/int8_vectors.h"

#if defined(__x86_64__)
#include <immintrin.h>
#endif

#include <algorithm>
#include <cmath>

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
#endif  // __x86_64__

void DotInt8ManyEach(const int8_t* query, const int8_t* codes, int dim, size_t n, int32_t* out) {
  for (size_t i = 0; i < n; ++i) out[i] = DotInt8(query, codes + i * static_cast<size_t>(dim), dim);
}

using SummedFn = void (*)(const int8_t*, const int8_t*, const int32_t*, int, size_t, int32_t*);

void DotInt8ManySummedPortable(const int8_t* query, const int8_t* codes, const int32_t*, int dim,
                               size_t n, int32_t* out) {
  DotInt8ManyEach(query, codes, dim, n, out);
}

SummedFn PickSummed() {
#if defined(__x86_64__)
  __builtin_cpu_init();
  return __builtin_cpu_supports("avx512vnni") && __builtin_cpu_supports("avx512bw")
             ? DotInt8ManySummedVnni
             : DotInt8ManySummedPortable;
#else
  return DotInt8ManySummedPortable;
#endif
}

using DotFn = int32_t (*)(const int8_t*, const int8_t*, int);

DotFn PickDot() {
#if defined(__x86_64__)
  __builtin_cpu_init();
  return __builtin_cpu_supports("avx2") ? DotInt8Avx2 : DotInt8Scalar;
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
  static const SummedFn fn = PickSummed();
  fn(query, codes, sums, dim, n, out);
}

}  // namespace engram
