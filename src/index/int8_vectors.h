// Int8 vector codes: each L2-normalised float vector is stored as int8 values with one float scale
// (x ≈ scale * code), a quarter of float32's memory. Dot products between codes run in integer
// SIMD (AVX2 maddubs/madd) with a scalar fallback chosen at runtime.
//
// Thread-safety: pure functions.
#pragma once

#include <cstdint>
#include <vector>

namespace engram {

// Quantises `dim` floats into `code` (dim int8) and returns the scale (max |x| / 127).
float QuantizeInt8(const float* x, int dim, int8_t* code);

// Sum of code_a[i] * code_b[i] as an exact integer.
int32_t DotInt8(const int8_t* a, const int8_t* b, int dim);

// The scalar version, for tests.
int32_t DotInt8Scalar(const int8_t* a, const int8_t* b, int dim);

}  // namespace engram
