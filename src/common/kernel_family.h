// KernelFamily: which vector instruction sets the process's numeric kernels use, chosen once for
// the whole process so that the built-in model (embed/simd_kernels) and the int8 vector scan
// (index/int8_vectors) always run the same family. Forcing a smaller family than the CPU's best
// (ENGRAM_KERNELS, or `serve --kernels`) runs every path of that family on a bigger CPU, for tests
// and comparisons.
//
// Thread-safety: every function is safe to call concurrently (the selection is guarded).
#pragma once

#include <string_view>

#include "common/status.h"

namespace engram {

enum class KernelFamily { kScalar, kAvx2, kAvxVnni, kAvx512, kNeon };

// "scalar", "avx2", "avxvnni", "avx512", "neon".
const char* KernelFamilyName(KernelFamily family);
// The family of a name above; "auto" and "" give BestKernelFamily(). InvalidParameter otherwise.
Result<KernelFamily> ParseKernelFamily(std::string_view name);
// Whether this CPU runs the family: AVX2 needs AVX2 + FMA, AVX-VNNI also AVX-VNNI, AVX-512
// needs AVX-512F, NEON an AArch64 CPU.
bool CpuSupportsKernelFamily(KernelFamily family);
// InvalidParameter naming what the family needs and what this CPU runs instead; Ok when the CPU
// runs it.
Status CheckCpuRunsKernelFamily(KernelFamily family);
// The widest family this CPU runs: NEON on AArch64; AVX-512, else AVX-VNNI, else AVX2, else
// scalar on x86-64.
KernelFamily BestKernelFamily();
// Whether the CPU has the Arm dot-product extension (SDOT, FEAT_DotProd: optional before
// Armv8.4; Graviton 2 and Apple M1 have it, Cortex-A72 / Graviton 1 do not), as the OS reports
// it. The neon family's int8 paths run SDOT where it is, widening multiplies elsewhere. False on
// other architectures.
bool CpuHasArmDotProduct();

// The process's family, fixed at the first call of this or ChooseKernelFamily(): the one
// ChooseKernelFamily() set, else ENGRAM_KERNELS, else BestKernelFamily(). An ENGRAM_KERNELS this
// CPU cannot run (or that names no family) ends the process with a message on stderr; programs
// check it first with KernelFamilyFromEnvironment() to fail more politely.
KernelFamily SelectedKernelFamily();
// ENGRAM_KERNELS parsed and checked against the CPU (BestKernelFamily() when unset or "auto").
Result<KernelFamily> KernelFamilyFromEnvironment();
// Fixes the process's family before its first use. InvalidParameter when the CPU lacks it,
// Conflict when SelectedKernelFamily() already answered another one.
Status ChooseKernelFamily(KernelFamily family);

}  // namespace engram
