// The portable scalar kernels: float32 and int8 (see simd_kernels_internal.h).
#include <algorithm>
#include <cmath>
#include <cstdint>

#include "embed/simd_kernels_internal.h"

namespace engram {
namespace simd_internal {

// ---------------------------------------------------------------------------------------------
// Scalar versions: the reference semantics, and the fallback on CPUs without AVX2.

float DotScalar(const float* a, const float* b, int n) {
  float sum = 0;
  for (int i = 0; i < n; ++i) sum += a[i] * b[i];
  return sum;
}

void GemmScalar(int m, int n, int k, const float* a, int lda, const float* b, int ldb, float* c,
                int ldc, bool accumulate) {
  for (int r = 0; r < m; ++r) {
    float* c_row = c + static_cast<size_t>(r) * ldc;
    if (!accumulate) std::fill(c_row, c_row + n, 0.0f);
    const float* a_row = a + static_cast<size_t>(r) * lda;
    for (int kk = 0; kk < k; ++kk) {
      const float av = a_row[kk];
      const float* b_row = b + static_cast<size_t>(kk) * ldb;
      for (int j = 0; j < n; ++j) c_row[j] += av * b_row[j];
    }
  }
}

void GemmPackedScalar(int m, const float* a, int lda, const PackedMatrix& b, float* c, int ldc,
                      bool accumulate) {
  const int panels = b.cols() / kPanel;
  for (int p = 0; p < panels; ++p) {
    GemmScalar(m, kPanel, b.rows(), a, lda, b.panel(p), kPanel, c + p * kPanel, ldc, accumulate);
  }
}

// ---------------------------------------------------------------------------------------------
// int8 without AVX512_VNNI. Every version quantises A exactly as QuantizeRowsUint8 does (same
// float operations, so the same codes) and sums the products exactly in int32, then applies
// the scales as MicroTileInt8 does: every int8 table gives the same C.

namespace {

// Quantises one row: returns its scale, writes round(a / s) to codes[0..4*quads) (zeros past
// depth).
float QuantizeRowScalar(const float* row, int depth, int quads, int8_t* codes) {
  float largest = 0;
  for (int i = 0; i < depth; ++i) largest = std::max(largest, std::fabs(row[i]));
  const float inv = largest > 0 ? 127.0f / largest : 0.0f;
  for (int i = 0; i < 4 * quads; ++i) {
    const float x = i < depth ? row[i] * inv : 0.0f;
    codes[i] = static_cast<int8_t>(std::clamp(static_cast<int>(std::nearbyint(x)), -127, 127));
  }
  return largest / 127.0f;
}

}  // namespace

void QuantizeRowsScalar(int m, const float* a, int lda, int depth, Int8Rows& out) {
  out.quads = (depth + 3) / 4;
  out.codes.resize(static_cast<size_t>(m) * out.quads);
  out.scales.resize(static_cast<size_t>(m));
  for (int r = 0; r < m; ++r) {
    out.scales[r] = QuantizeRowScalar(
        a + static_cast<size_t>(r) * lda, depth, out.quads,
        reinterpret_cast<int8_t*>(out.codes.data() + static_cast<size_t>(r) * out.quads));
  }
}

namespace {

// C[m x B.cols()] from int32 sums: the one place every non-VNNI int8 version scales its output
// in scalar code (the SIMD ones do the same operations per lane).
inline float ScaleInt8Sum(int32_t sum, float a_scale, float b_scale, float base) {
  return std::fma(static_cast<float>(sum), b_scale * a_scale, base);
}

}  // namespace

void GemmPackedInt8Scalar(int m, const float* a, int lda, const PackedMatrix& b, float* c, int ldc,
                          bool accumulate) {
  if (!b.has_int8()) {
    GemmPackedScalar(m, a, lda, b, c, ldc, accumulate);
    return;
  }
  thread_local Int8Rows rows;
  QuantizeRowsScalar(m, a, lda, b.rows(), rows);
  const int panels = b.cols() / kPanel;
  for (int r = 0; r < m; ++r) {
    const int8_t* codes =
        reinterpret_cast<const int8_t*>(rows.codes.data() + static_cast<size_t>(r) * rows.quads);
    float* c_row = c + static_cast<size_t>(r) * ldc;
    for (int p = 0; p < panels; ++p) {
      const int8_t* panel = b.int8_panel(p);
      int32_t sums[kPanel] = {};
      for (int q = 0; q < rows.quads; ++q) {
        const int8_t* w = panel + static_cast<size_t>(q) * 4 * kPanel;
        for (int col = 0; col < kPanel; ++col) {
          for (int j = 0; j < 4; ++j) sums[col] += int32_t{codes[4 * q + j]} * w[4 * col + j];
        }
      }
      for (int col = 0; col < kPanel; ++col) {
        const int j = p * kPanel + col;
        c_row[j] = ScaleInt8Sum(sums[col], rows.scales[r], b.int8_scales()[j],
                                accumulate ? c_row[j] : 0.0f);
      }
    }
  }
}

}  // namespace simd_internal
}  // namespace engram
