// The AArch64 NEON int8 product steps shared by the model's int8 kernels (embed/simd_kernels) and
// the int8 vector scan (index/int8_vectors). Both multiply signed bytes by signed bytes and sum
// them exactly in int32: with SDOT where the CPU has the dot-product extension
// (CpuHasArmDotProduct in common/kernel_family.h), with widening multiplies where it does not.
// Empty on other architectures.
//
// Thread-safety: pure functions.
#pragma once

#if defined(__aarch64__)
#include <arm_neon.h>

// The dot-product extension is optional before Armv8.4: only functions with this attribute may
// use SDOT, and only callers that checked CpuHasArmDotProduct() may call them.
#if defined(__clang__)
#define ENGRAM_TARGET_DOTPROD __attribute__((target("dotprod")))
#else
#define ENGRAM_TARGET_DOTPROD __attribute__((target("arch=armv8.2-a+dotprod")))
#endif

namespace engram {

// SDOT: acc[i] += a[4i..4i+3] . b[4i..4i+3] in int32. GCC's arm_neon.h offers vdotq_s32 to
// functions with the target attribute; clang's (before LLVM 16) only to whole builds with
// +dotprod, so there it is the instruction itself.
ENGRAM_TARGET_DOTPROD inline int32x4_t DotAccumulate(int32x4_t acc, int8x16_t a, int8x16_t b) {
#if defined(__clang__) && !defined(__ARM_FEATURE_DOTPROD)
  __asm__("sdot %0.4s, %1.16b, %2.16b" : "+w"(acc) : "w"(a), "w"(b));
  return acc;
#else
  return vdotq_s32(acc, a, b);
#endif
}

// The same sums on every AArch64 CPU, in four instructions instead of one: vmull_s8 /
// vmull_high_s8 give the 16 byte products as int16 (exact: |a|, |b| <= 127, so |a b| <= 16129),
// vpaddq_s16 adds neighbouring pairs (at most 2 x 127 x 127 = 32258, still exact in int16), so
// lanes 2i and 2i+1 hold the halves of quad i, and vpadalq_s16 adds those two into int32 lane i.
// Needs codes within [-127, 127], as every int8 code of Engram is (-128 could overflow the pair).
inline int32x4_t MullAccumulate(int32x4_t acc, int8x16_t a, int8x16_t b) {
  return vpadalq_s16(acc,
                     vpaddq_s16(vmull_s8(vget_low_s8(a), vget_low_s8(b)), vmull_high_s8(a, b)));
}

}  // namespace engram

#endif  // __aarch64__
