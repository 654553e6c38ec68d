// Micro-benchmark of the exact vector scan: one query against a scope of N random unit vectors,
// k candidates (the hybrid search asks each retriever for 200). Random 512-d vectors are a worst
// case for the heap (scores close together); the scan itself does not depend on the data.
//
//   build/src/index/vector_bench --benchmark_min_time=1
#include <benchmark/benchmark.h>

#include <cmath>
#include <random>
#include <vector>

#include "index/test_vectors.h"
#include "index/vector_index.h"

namespace engram {
namespace {

// Args: vectors in the scope, k, filter (0 none, 1 a predicate admitting every other document).
void BM_ExactScan(benchmark::State& state) {
  const auto n = static_cast<DocId>(state.range(0));
  const auto k = static_cast<size_t>(state.range(1));
  const bool filtered = state.range(2) != 0;
  VectorIndex index(VectorIndexOptions{.dim = 512, .hnsw_threshold = 0});
  std::mt19937 rng(5);
  for (DocId d = 0; d < n; ++d) index.Set(d, test_vectors::RandomUnit(rng, 512).data());
  std::vector<std::vector<float>> queries;
  for (int i = 0; i < 64; ++i) queries.push_back(test_vectors::RandomUnit(rng, 512));
  const std::function<bool(DocId)> every_other = [](DocId d) { return d % 2 == 0; };
  size_t i = 0;
  for (auto _ : state) {
    auto hits =
        index.Search(queries[i++ % queries.size()].data(), k, filtered ? &every_other : nullptr);
    benchmark::DoNotOptimize(hits.data());
  }
}
BENCHMARK(BM_ExactScan)
    ->ArgsProduct({{10000, 100000}, {10, 200}, {0, 1}})
    ->ArgNames({"vectors", "k", "filter"})
    ->Unit(benchmark::kMicrosecond);

}  // namespace
}  // namespace engram

BENCHMARK_MAIN();
