// Dense float kernels for the built-in embedder and the vector index.
//
// Each kernel has a portable scalar version and, on x86-64, an AVX2+FMA version and an AVX-512F
// version, or on AArch64 a NEON version, the SIMD ones compiled with per-function target
// attributes where the instructions are optional (no -march flag, so the binary still runs on CPUs
// without them). The best version is picked once, at first use, with __builtin_cpu_supports on
// x86-64 (NEON is part of every AArch64 CPU; its dot-product extension is asked of the OS), or
// forced: KernelFamily. Only the tables of the build's architecture exist; the others' accessors
// return nullptr. Float32 versions differ only in rounding order (well below 1e-5 on
// model-sized inputs); the reduced-precision packed products (bf16, int8) are opt-in tables.
//
// Thread-safety: all functions are pure over their arguments and safe to call concurrently (the
// family selection is guarded internally).
// Ownership: callers own every buffer; kernels never allocate, except PackedMatrix::Pack.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string_view>
#include <vector>

#include "common/kernel_family.h"
#include "common/status.h"

namespace engram {

// A row-major [rows x cols] weight matrix re-laid out for Gemm: column panels of kPanelWidth
// floats, each panel stored row by row. Streaming a panel is then one contiguous read, which keeps
// the weights out of the cache-set conflicts a large row stride causes.
class PackedMatrix {
 public:
  static constexpr int kPanelWidth = 16;

  PackedMatrix() = default;
  // `cols` must be a multiple of kPanelWidth (all of the model's matrices are). With `bf16`, the
  // matrix is also kept rounded to bfloat16 for the bf16 kernels (see Avx512Bf16Kernels).
  static PackedMatrix Pack(const float* row_major, int rows, int cols, bool bf16 = false);

  int rows() const { return rows_; }
  int cols() const { return cols_; }
  // Panel p holds columns [p*16, p*16+16), row r at panel(p) + r*16.
  const float* panel(int p) const {
    return data_.data() + static_cast<size_t>(p) * rows_ * kPanelWidth;
  }
  bool has_bf16() const { return !bf16_.empty(); }
  bool has_int8() const { return !int8_.empty(); }
  // Adds the bfloat16 copy to a matrix packed without it.
  void AddBf16();
  // bfloat16 panel p, as pairs of rows: for q in [0, (rows+1)/2), 32 values, column c's rows
  // 2q and 2q+1 at [2c] and [2c+1] (the operand layout of AVX512_BF16's dot-product
  // instruction); an odd last row is paired with zeros.
  const uint16_t* bf16_panel(int p) const {
    return bf16_.data() + static_cast<size_t>(p) * ((rows_ + 1) / 2) * 2 * kPanelWidth;
  }
  // Adds the int8 copy to a matrix packed without it: each column quantised symmetrically with
  // its own scale (max |w| / 127), for the int8 kernels (see Avx512Int8Kernels).
  void AddInt8();
  // int8 panel p, as quads of rows: for q in [0, (rows+3)/4), 64 bytes, column c's rows 4q..4q+3
  // at [4c..4c+3] (the operand layout of AVX512_VNNI's vpdpbusd); rows past the end are zero.
  const int8_t* int8_panel(int p) const {
    return int8_.data() + static_cast<size_t>(p) * ((rows_ + 3) / 4) * 4 * kPanelWidth;
  }
  // Per column: the scale of its codes, and 128 x the sum of its codes (the kernels feed
  // activations as unsigned bytes offset by 128 and take this back out).
  const float* int8_scales() const { return int8_scales_.data(); }
  const int32_t* int8_offsets() const { return int8_offsets_.data(); }

 private:
  int rows_ = 0;
  int cols_ = 0;
  std::vector<float> data_;
  std::vector<uint16_t> bf16_;
  std::vector<int8_t> int8_;
  std::vector<float> int8_scales_;
  std::vector<int32_t> int8_offsets_;
};

// Round-to-nearest-even float -> bfloat16 (the top 16 bits of the float). Inline: the bf16
// kernel rounds every value of A with it.
inline uint16_t FloatToBf16(float f) {
  uint32_t u;
  std::memcpy(&u, &f, sizeof(u));
  if ((u & 0x7F800000u) == 0x7F800000u) return static_cast<uint16_t>(u >> 16);  // inf / nan
  u += 0x7FFFu + ((u >> 16) & 1u);
  return static_cast<uint16_t>(u >> 16);
}

// Which instruction set a kernel table uses.
enum class KernelIsa {
  kScalar,
  kAvx2,
  kAvx512,
  kAvx512Bf16,
  kAvx512Int8,
  kScalarInt8,
  kAvx2Int8,
  kAvxVnniInt8,
  kNeon,
  kNeonInt8,
  kNeonInt8Mull,
};

// The arithmetic of a table's gemm_packed (every other kernel is float32 in every table).
enum class KernelPrecision { kFloat32, kBf16, kInt8 };

// One implementation of every kernel. Obtain with Kernels(); tests compare the two tables.
struct KernelTable {
  KernelIsa isa;
  KernelPrecision precision;
  // sum_i a[i] * b[i]
  float (*dot)(const float* a, const float* b, int n);
  // C[m x n] = (accumulate ? C : 0) + A[m x k] * B[k x n]; row-major with leading dimensions.
  void (*gemm)(int m, int n, int k, const float* a, int lda, const float* b, int ldb, float* c,
               int ldc, bool accumulate);
  // C[m x B.cols()] = (accumulate ? C : 0) + A[m x B.rows()] * B.
  void (*gemm_packed)(int m, const float* a, int lda, const PackedMatrix& b, float* c, int ldc,
                      bool accumulate);
};

// The scalar table; always available.
const KernelTable& ScalarKernels();
// The AVX2+FMA table, or nullptr when the CPU lacks AVX2 or FMA.
const KernelTable* Avx2Kernels();
// The AVX-512F table, or nullptr when the CPU lacks AVX-512F.
const KernelTable* Avx512Kernels();
// The AVX-512 table with bfloat16 packed products (AVX512_BF16: twice the multiply-adds per
// instruction of float32 FMA), or nullptr when the CPU lacks it. gemm_packed rounds A and B to
// bfloat16 and accumulates in float32 (relative error ~1e-3), so it needs matrices packed with
// bf16 = true; every other kernel is the float32 AVX-512 one. Opt-in only: never returned by
// Kernels().
const KernelTable* Avx512Bf16Kernels();

// The int8 tables. Their gemm_packed quantises each row of A to 8 bits with its own scale
// (round(a / s), s = max |a| / 127) and uses B's per-column int8 codes (AddInt8), accumulating
// exactly in int32 (relative error ~1e-2, all of it from the two roundings), so it needs
// matrices with AddInt8(); a matrix without codes runs the table's float32 kernel. The integer
// sums are exact in every version, so all int8 tables give the same C to the last bit (the
// scales apply in the same order too): vectors computed with any of them are interchangeable.
// Every other kernel is the table's float32 one. Opt-in only: never returned by Kernels().
//
// Plain C++ loops: the reference, and what --embed-precision int8 runs in the scalar family
// (slower than float32 there).
const KernelTable& ScalarInt8Kernels();
// AVX2 (vpmaddubsw + vpmaddwd; the sign of A's code moves onto B's with vpsignb so the byte
// products stay within int16: |a| * |b| <= 127 * 127, two of them <= 32258), or nullptr when the
// CPU lacks AVX2 or FMA.
const KernelTable* Avx2Int8Kernels();
// AVX-VNNI (256-bit vpdpbusd, Alder Lake and later, Zen 5), or nullptr when the CPU lacks it.
const KernelTable* AvxVnniInt8Kernels();
// AVX512_VNNI (four times the multiply-adds per instruction of float32 FMA), or nullptr when the
// CPU lacks it.
const KernelTable* Avx512Int8Kernels();

// The AArch64 NEON table (float32 FMA on 4 lanes), or nullptr on other architectures.
const KernelTable* NeonKernels();
// NEON int8 with the dot-product extension (SDOT: four byte products into each int32 lane;
// Graviton 2 and later, Apple M1 and later), or nullptr when the CPU or architecture lacks it.
// Its float32 kernels are NeonKernels()'.
const KernelTable* NeonInt8Kernels();
// NEON int8 without the dot-product extension, for the AArch64 CPUs that lack it (Cortex-A72,
// Graviton 1, Raspberry Pi 4): byte products widened to int16 (vmull_s8, exact since
// |a|, |b| <= 127) and added pairwise into int32 (vpadalq_s16), four instructions per 16 byte
// products where SDOT needs one. Non-null on every AArch64 CPU, nullptr on other architectures.
// Its float32 kernels are NeonKernels()'.
const KernelTable* NeonMullInt8Kernels();

// The fastest float32 table of the process's kernel family (see SelectedKernelFamily).
const KernelTable& Kernels();

// The process's kernel family (KernelFamily, SelectedKernelFamily, ChooseKernelFamily, ...) is
// common/kernel_family.h: the int8 vector scan of the index follows the same choice.

// The tables of one family; nullptr where it has none (bf16 needs AVX512_BF16).
struct KernelFamilyTables {
  const KernelTable* fp32 = nullptr;
  const KernelTable* bf16 = nullptr;
  // AVX-512: AVX512_VNNI, else AVX-VNNI, else AVX2; AVX-VNNI: AVX-VNNI; AVX2: AVX2; NEON: NEON
  // with dot product, else NEON widening multiplies; scalar: scalar.
  const KernelTable* int8 = nullptr;
};
// InvalidParameter naming the missing instructions when the CPU lacks the family.
Result<KernelFamilyTables> TablesOfKernelFamily(KernelFamily family);

// Dot product with the fastest kernel. For L2-normalised vectors this is the cosine similarity,
// which is what the vector index wants: it stores normalised vectors and skips the norms.
inline float Dot(const float* a, const float* b, int dim) { return Kernels().dot(a, b, dim); }

// Cosine similarity of arbitrary vectors: dot / (|a| |b|); 0 when either vector is zero.
float Cosine(const float* a, const float* b, int dim);

}  // namespace engram
