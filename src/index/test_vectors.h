// Random unit vectors and a plain float dot product for the index tests and benchmarks
// (header-only; not part of the server).
//
// Thread-safety: pure functions; the caller owns the generator.
#pragma once

#include <cmath>
#include <random>
#include <vector>

namespace engram::test_vectors {

// A uniformly random direction in `dim` dimensions (normalised Gaussian sample).
inline std::vector<float> RandomUnit(std::mt19937& rng, int dim) {
  std::normal_distribution<float> n(0, 1);
  std::vector<float> v(static_cast<size_t>(dim));
  float norm = 0;
  for (auto& x : v) {
    x = n(rng);
    norm += x * x;
  }
  norm = std::sqrt(norm);
  for (auto& x : v) x /= norm;
  return v;
}

// sum a[i] * b[i] in float, in index order: the reference the SIMD and int8 paths are checked by.
inline float DotF(const std::vector<float>& a, const std::vector<float>& b) {
  float s = 0;
  for (size_t i = 0; i < a.size(); ++i) s += a[i] * b[i];
  return s;
}

}  // namespace engram::test_vectors
