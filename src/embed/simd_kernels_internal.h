// The kernels' shared parts, private to embed/simd_kernels*.cc: the packed-panel blocking
// constants, the int8 tile and quantised-row types, and the declarations of every kernel version
// the tables in simd_kernels.cc point to. Each version is defined in the file of its instruction
// set (simd_kernels_scalar.cc, _avx2.cc, _avx512.cc, _avx2_int8.cc, _avx512_int8.cc, _neon.cc),
// with the same target attribute as here: only a table whose CPU check passed (simd_kernels.cc)
// ever calls a version that needs optional instructions. Nothing outside those files includes
// this header; everyone else uses embed/simd_kernels.h.
//
// Thread-safety: constants, plain types and pure functions (the int8 versions keep their scratch
// buffers thread-local).
#pragma once

#include <cstddef>
#include <cstdint>
#include <type_traits>
#include <vector>

#include "embed/simd_kernels.h"

#if defined(__aarch64__)
#include "common/neon_int8.h"
#endif

namespace engram {
namespace simd_internal {

constexpr int kPanel = PackedMatrix::kPanelWidth;
// Depth of one pass over a packed panel: 256 rows x 16 floats = 16 KB stays in L1 while every
// row block of A streams past it.
constexpr int kDepthBlock = 256;

// Where a finished int8 tile goes: its rows' and columns' scales, the columns' offsets, and C.
struct Int8Tile {
  const float* a_scales;
  const float* b_scales;
  const int32_t* b_offsets;
  float* c;
  int ldc;
  bool load_c;
};

// Rows of A quantised for the int8 kernels without AVX512_VNNI: signed codes, four per uint32
// (depth padded with zeros), and their magnitudes for the AVX2 kernel.
struct Int8Rows {
  int quads = 0;
  std::vector<uint32_t> codes;
  std::vector<uint32_t> magnitudes;
  std::vector<float> scales;
};

// ---------------------------------------------------------------------------------------------
// Scalar versions (simd_kernels_scalar.cc).

float DotScalar(const float* a, const float* b, int n);
void GemmScalar(int m, int n, int k, const float* a, int lda, const float* b, int ldb, float* c,
                int ldc, bool accumulate);
void GemmPackedScalar(int m, const float* a, int lda, const PackedMatrix& b, float* c, int ldc,
                      bool accumulate);
// Quantises each row of A for the int8 kernels without AVX512_VNNI (the scalar and NEON ones).
void QuantizeRowsScalar(int m, const float* a, int lda, int depth, Int8Rows& out);
void GemmPackedInt8Scalar(int m, const float* a, int lda, const PackedMatrix& b, float* c, int ldc,
                          bool accumulate);

#if defined(__x86_64__)
constexpr int kRowsPerTile512 = 12;  // 12 rows x 2 vectors = 24 of the 32 zmm registers

// Calls fn(std::integral_constant<int, R>{}) for R = rows in 1..kRowsPerTile512: the AVX-512
// micro-tiles take their row count as a template argument so that their accumulators stay in
// registers, and every kernel picks the instance for a block's rows this one way.
template <typename Fn>
void ForTileRows(int rows, Fn&& fn) {
  static_assert(kRowsPerTile512 == 12, "one case per row count");
  switch (rows) {
    case 12:
      fn(std::integral_constant<int, 12>{});
      break;
    case 11:
      fn(std::integral_constant<int, 11>{});
      break;
    case 10:
      fn(std::integral_constant<int, 10>{});
      break;
    case 9:
      fn(std::integral_constant<int, 9>{});
      break;
    case 8:
      fn(std::integral_constant<int, 8>{});
      break;
    case 7:
      fn(std::integral_constant<int, 7>{});
      break;
    case 6:
      fn(std::integral_constant<int, 6>{});
      break;
    case 5:
      fn(std::integral_constant<int, 5>{});
      break;
    case 4:
      fn(std::integral_constant<int, 4>{});
      break;
    case 3:
      fn(std::integral_constant<int, 3>{});
      break;
    case 2:
      fn(std::integral_constant<int, 2>{});
      break;
    case 1:
      fn(std::integral_constant<int, 1>{});
      break;
    default:
      break;
  }
}

// ---------------------------------------------------------------------------------------------
// AVX2 + FMA versions (simd_kernels_avx2.cc).

__attribute__((target("avx2,fma"))) float DotAvx2(const float* a, const float* b, int n);
__attribute__((target("avx2,fma"))) void GemmAvx2(int m, int n, int k, const float* a, int lda,
                                                  const float* b, int ldb, float* c, int ldc,
                                                  bool accumulate);
__attribute__((target("avx2,fma"))) void GemmPackedAvx2(int m, const float* a, int lda,
                                                        const PackedMatrix& b, float* c, int ldc,
                                                        bool accumulate);

// AVX-512F versions and AVX512_BF16 packed products (simd_kernels_avx512.cc).

__attribute__((target("avx512f"))) float DotAvx512(const float* a, const float* b, int n);
__attribute__((target("avx512f"))) void GemmAvx512(int m, int n, int k, const float* a, int lda,
                                                   const float* b, int ldb, float* c, int ldc,
                                                   bool accumulate);
__attribute__((target("avx512f"))) void GemmPackedAvx512(int m, const float* a, int lda,
                                                         const PackedMatrix& b, float* c, int ldc,
                                                         bool accumulate);
__attribute__((target("avx512f,avx512bf16"))) void GemmPackedBf16(int m, const float* a, int lda,
                                                                  const PackedMatrix& b, float* c,
                                                                  int ldc, bool accumulate);

// AVX512_VNNI int8 packed products (simd_kernels_avx512_int8.cc).
__attribute__((target("avx512f,avx512bw,avx512vnni"))) void GemmPackedInt8(
    int m, const float* a, int lda, const PackedMatrix& b, float* c, int ldc, bool accumulate);

// AVX2 and AVX-VNNI int8 packed products (simd_kernels_avx2_int8.cc).
__attribute__((target("avx2,fma"))) void GemmPackedInt8Avx2(int m, const float* a, int lda,
                                                            const PackedMatrix& b, float* c,
                                                            int ldc, bool accumulate);
__attribute__((target("avx2,fma,avxvnni"))) void GemmPackedInt8AvxVnni(
    int m, const float* a, int lda, const PackedMatrix& b, float* c, int ldc, bool accumulate);
#endif  // __x86_64__

#if defined(__aarch64__)
// ---------------------------------------------------------------------------------------------
// AArch64 NEON versions (simd_kernels_neon.cc).

float DotNeon(const float* a, const float* b, int n);
void GemmNeon(int m, int n, int k, const float* a, int lda, const float* b, int ldb, float* c,
              int ldc, bool accumulate);
void GemmPackedNeon(int m, const float* a, int lda, const PackedMatrix& b, float* c, int ldc,
                    bool accumulate);
ENGRAM_TARGET_DOTPROD void GemmPackedInt8NeonDot(int m, const float* a, int lda,
                                                 const PackedMatrix& b, float* c, int ldc,
                                                 bool accumulate);
void GemmPackedInt8NeonMull(int m, const float* a, int lda, const PackedMatrix& b, float* c,
                            int ldc, bool accumulate);
#endif  // __aarch64__

}  // namespace simd_internal
}  // namespace engram
