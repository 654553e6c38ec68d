#include "embed/simd_kernels.h"

#include <algorithm>
#include <cmath>
#include <cstdint>

#include "common/kernel_family.h"
#include "embed/simd_kernels_internal.h"

namespace engram {

using namespace simd_internal;  // NOLINT: the kernels' own parts, private to their files

namespace {

#if defined(__aarch64__)
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
    return Avx2Kernels() != nullptr && CpuSupportsKernelFamily(KernelFamily::kAvxVnni)
               ? &kAvxVnniInt8Table
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
