// Micro-benchmarks of the vector index.
// - BM_ExactScan: one query against a scope of N random unit vectors, k candidates (the hybrid
//   search asks each retriever for 200). Random 512-d vectors are a worst case for the heap
//   (scores close together); the scan itself does not depend on the data.
// - BM_GraphBuild: a shard's load of N vectors into the HNSW graph, one insertion at a time or as
//   one batch on 1 or 2 threads. Random vectors are the graph's hardest case.
// - BM_GraphSearch: one unfiltered query against a built graph of N random unit vectors, k
//   candidates (the path a scope past `hnsw_threshold` takes).
//
//   build/src/index/vector_bench --benchmark_min_time=1 --benchmark_filter=ExactScan
//   build/src/index/vector_bench --benchmark_filter=GraphBuild
//   build/src/index/vector_bench --benchmark_min_time=2 --benchmark_filter=GraphSearch
#include <benchmark/benchmark.h>

#include <algorithm>
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

// Args: vectors, threads (0: one insertion at a time, as before batches; else a batch).
void BM_GraphBuild(benchmark::State& state) {
  const auto n = static_cast<DocId>(state.range(0));
  const int threads = static_cast<int>(state.range(1));
  std::mt19937 rng(5);
  std::vector<std::vector<float>> vecs;
  for (DocId d = 0; d < n; ++d) vecs.push_back(test_vectors::RandomUnit(rng, 512));
  for (auto _ : state) {
    VectorIndex index(VectorIndexOptions{.dim = 512,
                                         .hnsw_threshold = 20000,
                                         .hnsw_build_threads = std::max(threads, 1),
                                         .hnsw_build_in_background = false});
    if (threads > 0) index.BeginBatch();
    for (DocId d = 0; d < n; ++d) index.Set(d, vecs[d].data());
    if (threads > 0) index.EndBatch();
    benchmark::DoNotOptimize(index.uses_hnsw());
  }
  state.counters["vectors_per_s"] =
      benchmark::Counter(static_cast<double>(n), benchmark::Counter::kIsIterationInvariantRate);
}
BENCHMARK(BM_GraphBuild)
    ->ArgsProduct({{100000}, {0, 1, 2}})
    ->ArgNames({"vectors", "threads"})
    ->Iterations(1)
    ->Unit(benchmark::kSecond)
    ->UseRealTime();

// Args: vectors in the graph, k. The graph is built once, outside the timing.
void BM_GraphSearch(benchmark::State& state) {
  const auto n = static_cast<DocId>(state.range(0));
  const auto k = static_cast<size_t>(state.range(1));
  VectorIndex index(
      VectorIndexOptions{.dim = 512, .hnsw_threshold = 1000, .hnsw_build_in_background = false});
  std::mt19937 rng(5);
  index.BeginBatch();
  for (DocId d = 0; d < n; ++d) index.Set(d, test_vectors::RandomUnit(rng, 512).data());
  index.EndBatch();
  if (!index.uses_hnsw()) {
    state.SkipWithError("the graph was not built");
    return;
  }
  std::vector<std::vector<float>> queries;
  for (int i = 0; i < 256; ++i) queries.push_back(test_vectors::RandomUnit(rng, 512));
  size_t i = 0;
  for (auto _ : state) {
    auto hits = index.Search(queries[i++ % queries.size()].data(), k);
    benchmark::DoNotOptimize(hits.data());
  }
}
BENCHMARK(BM_GraphSearch)
    ->ArgsProduct({{50000}, {10, 200}})
    ->ArgNames({"vectors", "k"})
    ->Unit(benchmark::kMicrosecond);

}  // namespace
}  // namespace engram

BENCHMARK_MAIN();
