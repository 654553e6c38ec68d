#include "common/kernel_family.h"

#if defined(__x86_64__)
#include <cpuid.h>
#endif
#if defined(__aarch64__) && defined(__linux__)
#include <sys/auxv.h>
#endif
#if defined(__aarch64__) && defined(__APPLE__)
#include <sys/sysctl.h>
#endif

#include <cstdio>
#include <cstdlib>
#include <optional>
#include <string>

#include "common/mutex.h"

namespace engram {

const char* KernelFamilyName(KernelFamily family) {
  switch (family) {
    case KernelFamily::kScalar:
      return "scalar";
    case KernelFamily::kAvx2:
      return "avx2";
    case KernelFamily::kAvxVnni:
      return "avxvnni";
    case KernelFamily::kAvx512:
      return "avx512";
    case KernelFamily::kNeon:
      return "neon";
  }
  return "?";
}

Result<KernelFamily> ParseKernelFamily(std::string_view name) {
  if (name.empty() || name == "auto") return BestKernelFamily();
  for (KernelFamily f : {KernelFamily::kScalar, KernelFamily::kAvx2, KernelFamily::kAvxVnni,
                         KernelFamily::kAvx512, KernelFamily::kNeon}) {
    if (name == KernelFamilyName(f)) return f;
  }
  return Status::InvalidParameter("unknown kernel family \"" + std::string(name) +
                                  "\" (auto, scalar, avx2, avxvnni, avx512 or neon)");
}

#if defined(__x86_64__)
namespace {

// AVX-VNNI is CPUID leaf 7, sub-leaf 1, EAX bit 4. Read directly: not every compiler that builds
// Engram knows the "avxvnni" name for __builtin_cpu_supports (clang 14 does not).
bool CpuHasAvxVnni() {
  unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
  if (__get_cpuid_count(7, 1, &eax, &ebx, &ecx, &edx) == 0) return false;
  return (eax & (1u << 4)) != 0;
}

}  // namespace
#endif

bool CpuSupportsKernelFamily(KernelFamily family) {
  switch (family) {
    case KernelFamily::kScalar:
      return true;
#if defined(__x86_64__)
    case KernelFamily::kAvx2:
      __builtin_cpu_init();
      return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
    case KernelFamily::kAvxVnni:
      return CpuSupportsKernelFamily(KernelFamily::kAvx2) && CpuHasAvxVnni();
    case KernelFamily::kAvx512:
      __builtin_cpu_init();
      return __builtin_cpu_supports("avx512f");
    case KernelFamily::kNeon:
      return false;
#elif defined(__aarch64__)
    case KernelFamily::kNeon:
      return true;
    default:
      return false;
#else
    default:
      return false;
#endif
  }
  return false;
}

Status CheckCpuRunsKernelFamily(KernelFamily family) {
  if (CpuSupportsKernelFamily(family)) return Status::Ok();
  static constexpr const char* kNeeds[] = {"", "AVX2 and FMA", "AVX2, FMA and AVX-VNNI", "AVX-512F",
                                           "an AArch64 CPU (NEON)"};
  return Status::InvalidParameter(std::string("kernel family ") + KernelFamilyName(family) +
                                  " needs " + kNeeds[static_cast<int>(family)] +
                                  ", which this CPU lacks (it runs " +
                                  KernelFamilyName(BestKernelFamily()) + ")");
}

KernelFamily BestKernelFamily() {
  for (KernelFamily f :
       {KernelFamily::kNeon, KernelFamily::kAvx512, KernelFamily::kAvxVnni, KernelFamily::kAvx2}) {
    if (CpuSupportsKernelFamily(f)) return f;
  }
  return KernelFamily::kScalar;
}

bool CpuHasArmDotProduct() {
#if defined(__aarch64__) && defined(__linux__)
#ifndef HWCAP_ASIMDDP
#define HWCAP_ASIMDDP (1 << 20)
#endif
  static const bool has = (getauxval(AT_HWCAP) & HWCAP_ASIMDDP) != 0;
  return has;
#elif defined(__aarch64__) && defined(__APPLE__)
  static const bool has = [] {
    int value = 0;
    size_t size = sizeof(value);
    return sysctlbyname("hw.optional.arm.FEAT_DotProd", &value, &size, nullptr, 0) == 0 &&
           value != 0;
  }();
  return has;
#else
  return false;
#endif
}

Result<KernelFamily> KernelFamilyFromEnvironment() {
  const char* value = std::getenv("ENGRAM_KERNELS");
  Result<KernelFamily> family = ParseKernelFamily(value == nullptr ? "" : value);
  if (!family.ok()) {
    return Status::InvalidParameter("ENGRAM_KERNELS: " + family.status().message());
  }
  if (Status runs = CheckCpuRunsKernelFamily(*family); !runs.ok()) {
    return Status::InvalidParameter("ENGRAM_KERNELS: " + runs.message());
  }
  return family;
}

namespace {

// The process's family once chosen or first used; the kernels cache their tables after that.
Mutex family_mu;
std::optional<KernelFamily> selected_family GUARDED_BY(family_mu);

}  // namespace

KernelFamily SelectedKernelFamily() {
  MutexLock lock(&family_mu);
  if (!selected_family) {
    Result<KernelFamily> family = KernelFamilyFromEnvironment();
    if (!family.ok()) {
      // Forcing a family is for tests and comparisons: silently running another one would make
      // their results lie, and nothing has run yet, so stop here.
      std::fprintf(stderr, "%s\n", family.status().message().c_str());
      std::exit(2);
    }
    selected_family = *family;
  }
  return *selected_family;
}

Status ChooseKernelFamily(KernelFamily family) {
  if (Status runs = CheckCpuRunsKernelFamily(family); !runs.ok()) return runs;
  MutexLock lock(&family_mu);
  if (selected_family && *selected_family != family) {
    return Status::Conflict(std::string("kernel family already ") +
                            KernelFamilyName(*selected_family));
  }
  selected_family = family;
  return Status::Ok();
}

}  // namespace engram
