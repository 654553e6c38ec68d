// Benchmarks for the analyzer and the BM25 index on synthetic text.
//
// Docs are ~30 words drawn from a Zipfian (s = 1) vocabulary of 30k words whose most frequent
// ranks are real English stop words, so the analyzer's stop-word and stemming work is realistic.
// Queries are 8 words drawn from the same distribution without the stop words.
//
// Search latency percentiles (over all threads of a run, so they include the queueing of 16
// clients on 2 cores) are printed after the Google Benchmark table.
#include <benchmark/benchmark.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <map>
#include <memory>
#include <mutex>
#include <random>
#include <string>
#include <vector>

#include "index/analyzer.h"
#include "index/bm25_index.h"
#include "index/zipf_vocabulary.h"

namespace engram {
namespace {

constexpr size_t kVocabulary = 30000;
constexpr size_t kWordsPerDoc = 30;
constexpr size_t kWordsPerQuery = 8;
class Corpus {
 public:
  Corpus()
      : rng_(42),
        words_({.size = kVocabulary,
                .head = {"the", "of",  "and",  "to",  "a",    "in",  "is", "that", "it",
                         "was", "for", "on",   "are", "with", "as",  "i",  "his",  "they",
                         "be",  "at",  "what", "did", "when", "how", "you"},
                .min_length = 3,
                .max_length = 10,
                .ing_every = 5,  // some inflected forms so the stemmer has work to do
                .s_every = 7},
               rng_) {}

  std::string Doc() {
    std::string text;
    for (size_t i = 0; i < kWordsPerDoc; ++i) {
      std::string word = words_.Any(rng_);
      if (i == 0) word[0] = static_cast<char>(word[0] - 'a' + 'A');
      text += word;
      text += (i + 1 == kWordsPerDoc) ? "." : (i % 9 == 8 ? ", " : " ");
    }
    return text;
  }

  std::string Query() {
    std::string text;
    for (size_t i = 0; i < kWordsPerQuery; ++i) {
      if (i > 0) text += ' ';
      text += words_.Content(rng_);
    }
    return text;
  }

 private:
  std::mt19937_64 rng_;
  ZipfVocabulary words_;
};

struct Fixture {
  Bm25Index index;
  std::vector<std::vector<std::string>> queries;
  double build_seconds = 0;
};

// Built once per size and shared by all runs and threads (Search is const).
const Fixture& GetFixture(size_t docs) {
  static std::mutex mu;
  static std::map<size_t, std::unique_ptr<Fixture>> fixtures;
  std::lock_guard<std::mutex> lock(mu);
  std::unique_ptr<Fixture>& slot = fixtures[docs];
  if (slot == nullptr) {
    slot = std::make_unique<Fixture>();
    Corpus corpus;
    Analyzer analyzer;
    auto start = std::chrono::steady_clock::now();
    for (DocId d = 0; d < docs; ++d) slot->index.Add(d, analyzer.Analyze(corpus.Doc()));
    slot->build_seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    for (int q = 0; q < 1000; ++q) slot->queries.push_back(analyzer.AnalyzeQuery(corpus.Query()));
  }
  return *slot;
}

// Latencies of the last run of each search benchmark, merged over its threads.
std::mutex latency_mu;
std::map<std::string, std::vector<double>> latencies_us;

void BM_Analyze(benchmark::State& state) {
  Corpus corpus;
  std::vector<std::string> docs;
  size_t bytes = 0;
  for (int i = 0; i < 1000; ++i) {
    docs.push_back(corpus.Doc());
    bytes += docs.back().size();
  }
  Analyzer analyzer;
  size_t terms = 0;
  for (auto _ : state) {
    for (const std::string& doc : docs) terms += analyzer.Analyze(doc).size();
  }
  benchmark::DoNotOptimize(terms);
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * bytes));
  state.counters["docs/s"] = benchmark::Counter(static_cast<double>(state.iterations() * 1000),
                                                benchmark::Counter::kIsRate);
}
// CPU time: the build machine is shared, and analysis is single-threaded CPU work.
BENCHMARK(BM_Analyze)->Unit(benchmark::kMillisecond);

void BM_AnalyzeCode(benchmark::State& state) {
  std::string text;
  for (int i = 0; i < 200; ++i) {
    text +=
        "Call getUserName() in src/index/bm25_index.cc via std::vector<int> and "
        "os.path.join; the max_token_bytes option (kebab-case-name) was 3.5x faster. ";
  }
  Analyzer analyzer;
  for (auto _ : state) benchmark::DoNotOptimize(analyzer.Analyze(text));
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * text.size()));
}
BENCHMARK(BM_AnalyzeCode)->Unit(benchmark::kMillisecond);

void BM_AnalyzeCjk(benchmark::State& state) {
  std::string text;
  for (int i = 0; i < 200; ++i)
    text += "我喜欢喝咖啡，但是今天早上没有时间。私はコーヒーが好きです。";
  Analyzer analyzer;
  for (auto _ : state) benchmark::DoNotOptimize(analyzer.Analyze(text));
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * text.size()));
}
BENCHMARK(BM_AnalyzeCjk)->Unit(benchmark::kMillisecond);

void BM_Search(benchmark::State& state) {
  const size_t docs = static_cast<size_t>(state.range(0));
  const size_t k = static_cast<size_t>(state.range(1));
  const bool filtered = state.range(2) != 0;
  const Fixture& fixture = GetFixture(docs);
  const std::string key = "docs:" + std::to_string(docs) + " k:" + std::to_string(k) +
                          " filter:" + std::to_string(filtered) +
                          " threads:" + std::to_string(state.threads());
  if (state.thread_index() == 0) {
    std::lock_guard<std::mutex> lock(latency_mu);
    latencies_us[key].clear();
  }
  // A filter rejecting half the docs, as a scope/tag filter would.
  std::function<bool(DocId)> half = [](DocId d) { return (d & 1) == 0; };
  std::vector<double> mine;
  size_t q = static_cast<size_t>(state.thread_index()) * 37;
  size_t hits = 0;
  for (auto _ : state) {
    const auto& query = fixture.queries[q++ % fixture.queries.size()];
    auto start = std::chrono::steady_clock::now();
    hits += fixture.index.Search(query, k, filtered ? &half : nullptr).size();
    mine.push_back(
        std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - start)
            .count());
  }
  benchmark::DoNotOptimize(hits);
  {
    std::lock_guard<std::mutex> lock(latency_mu);
    auto& all = latencies_us[key];
    all.insert(all.end(), mine.begin(), mine.end());
  }
  // Averaged over threads: every thread reports the same shared fixture.
  auto same = [](double v) { return benchmark::Counter(v, benchmark::Counter::kAvgThreads); };
  state.counters["mem_bytes/doc"] =
      same(static_cast<double>(fixture.index.MemoryBytes()) / static_cast<double>(docs));
  state.counters["terms"] = same(static_cast<double>(fixture.index.term_count()));
  state.counters["build_s"] = same(fixture.build_seconds);
}
BENCHMARK(BM_Search)
    ->ArgsProduct({{10000, 100000}, {10}, {0, 1}})
    ->ArgNames({"docs", "k", "filter"})
    ->Unit(benchmark::kMicrosecond)
    ->UseRealTime()
    ->Threads(1)
    ->Threads(2)
    ->Threads(16)
    ->Iterations(4000);

// KeepTopK on lists of n scored docs (scores with ties, unique DocIds) against the heap of k alone
// (std::partial_sort), the way it takes below a sixteenth; each iteration copies one of 64 lists
// first, in both.
std::vector<std::vector<ScoredDoc>> ScoredLists(size_t n) {
  std::mt19937 rng(5);
  std::vector<std::vector<ScoredDoc>> lists(64);
  for (auto& list : lists) {
    for (size_t i = 0; i < n; ++i) {
      list.push_back({static_cast<DocId>(i), static_cast<float>(rng() % 100000) / 100000.0f});
    }
  }
  return lists;
}

template <bool kHeapOnly>
void TopK(benchmark::State& state) {
  const auto n = static_cast<size_t>(state.range(0));
  const auto k = static_cast<size_t>(state.range(1));
  const auto lists = ScoredLists(n);
  std::vector<ScoredDoc> docs;
  size_t i = 0;
  for (auto _ : state) {
    docs = lists[i++ % lists.size()];
    if constexpr (kHeapOnly) {
      std::partial_sort(docs.begin(), docs.begin() + static_cast<long>(std::min(k, n)), docs.end(),
                        RanksBefore);
      docs.resize(std::min(k, n));
    } else {
      KeepTopK(docs, k);
    }
    benchmark::DoNotOptimize(docs.data());
  }
}
void BM_KeepTopK(benchmark::State& state) { TopK<false>(state); }
void BM_PartialSortTopK(benchmark::State& state) { TopK<true>(state); }
BENCHMARK(BM_KeepTopK)
    ->ArgsProduct({{1000, 3000, 10000}, {10, 100, 300, 600, 1000}})
    ->ArgNames({"n", "k"});
BENCHMARK(BM_PartialSortTopK)
    ->ArgsProduct({{1000, 3000, 10000}, {10, 100, 300, 600, 1000}})
    ->ArgNames({"n", "k"});

void PrintLatencies() {
  std::printf("\nSearch latency over all threads of each run (us):\n");
  std::printf("%-52s %8s %8s %8s %8s\n", "benchmark", "p50", "p90", "p99", "max");
  for (auto& [name, values] : latencies_us) {
    if (values.empty()) continue;
    std::sort(values.begin(), values.end());
    auto at = [&values = values](double p) {
      return values[std::min(values.size() - 1, static_cast<size_t>(p * values.size()))];
    };
    std::printf("%-52s %8.1f %8.1f %8.1f %8.1f\n", name.c_str(), at(0.5), at(0.9), at(0.99),
                values.back());
  }
}

}  // namespace
}  // namespace engram

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  engram::PrintLatencies();
  return 0;
}
