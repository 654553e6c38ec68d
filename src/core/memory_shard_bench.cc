// Benchmarks of MemoryShard::Search (V4 memory search) with metadata filters, and of the
// entities listing (BM_NamedEntities, described beside it).
//
// One shard of 10,000 memories, all of one user_id, each with one of 8 metadata topics and a
// created_at spread over the shard. Memories are short sentences (8 to 20 words) built from a
// Zipfian (s = 1) vocabulary of 5,000 words, queries 4 content words from the same distribution.
// Two cases: BM25 only, and BM25 plus random unit vectors of dimension 512 (an exact scan: 10k
// vectors stay below the HNSW threshold, and filtered searches always scan).
//
// Each case times a user_id-only search and the filter bench/memory_load.py searches with,
//   {"AND": [{"metadata.topic": "t3"}, {"created_at": {"gte": <the median>}}]}  (1 in 16 memories)
// with the metadata index on and off (MemoryShardOptions::metadata_index), by 1 client and by 16
// concurrent ones. Latency percentiles over all threads of a run, the throughput and the mean
// latency of 16 closed-loop clients it implies are printed after the Google Benchmark table.
#include <benchmark/benchmark.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <random>
#include <string>
#include <vector>

#include "common/mutex.h"
#include "common/time_util.h"
#include "core/memory_filter.h"
#include "core/memory_shard.h"
#include "index/analyzer.h"
#include "index/zipf_vocabulary.h"

namespace engram {
namespace {

constexpr size_t kMemories = 10000;
constexpr int kTopics = 8;
constexpr int kDim = 512;
constexpr size_t kVocabulary = 5000;
constexpr const char* kModel = "bench-model";
class Corpus {
 public:
  Corpus()
      : rng_(7),
        words_({.size = kVocabulary,
                .head = {"the", "a", "to", "and", "of", "in", "is", "for", "on", "my", "with", "at",
                         "was", "that", "it", "user"},
                .min_length = 3,
                .max_length = 9,
                .ing_every = 6},
               rng_) {}

  // A short memory: "User prefers ..."-like sentences of 8 to 20 words.
  std::string Memory() {
    std::uniform_int_distribution<int> words(8, 20);
    std::string text = "User";
    for (int i = words(rng_); i > 0; --i) {
      text += ' ';
      text += words_.Any(rng_);
    }
    text += '.';
    return text;
  }

  std::string Query() {
    std::string text;
    for (int i = 0; i < 4; ++i) {
      if (i > 0) text += ' ';
      text += words_.Content(rng_);
    }
    return text;
  }

  std::vector<float> UnitVector() {
    std::normal_distribution<float> normal;
    std::vector<float> v(kDim);
    double norm = 0;
    for (float& x : v) {
      x = normal(rng_);
      norm += static_cast<double>(x) * x;
    }
    const float inv = static_cast<float>(1.0 / std::sqrt(norm));
    for (float& x : v) x *= inv;
    return v;
  }

 private:
  std::mt19937_64 rng_;
  ZipfVocabulary words_;
};

constexpr int64_t kStartUs = 1'700'000'000'000'000;  // 2023-11-14
constexpr int64_t kStepUs = 60'000'000;              // a memory a minute

// Memory i of the benchmarks' one user: its ids, and a time a minute after the one before.
MemoryRecord AliceMemory(size_t i) {
  MemoryRecord r;
  r.seq = static_cast<int64_t>(i + 1);
  r.id = "m-" + std::to_string(i + 1);
  r.user_id = "alice";
  r.created_at_us = r.updated_at_us = kStartUs + static_cast<int64_t>(i) * kStepUs;
  return r;
}

struct Fixture {
  Analyzer analyzer;
  std::unique_ptr<MemoryShard> shard;
  std::vector<std::vector<std::string>> queries;
  std::vector<std::vector<float>> query_vectors;
  MemoryFilter user_only;
  MemoryFilter filtered;
};

// Built once per (vectors, metadata_index) and shared by all runs and threads (Search is const).
const Fixture& GetFixture(bool vectors, bool metadata_index) {
  static Mutex mu;
  static std::map<std::pair<bool, bool>, std::unique_ptr<Fixture>> fixtures GUARDED_BY(mu);
  MutexLock lock(&mu);
  std::unique_ptr<Fixture>& slot = fixtures[{vectors, metadata_index}];
  if (slot != nullptr) return *slot;
  slot = std::make_unique<Fixture>();
  Fixture& f = *slot;
  MemoryShardOptions options;
  options.vectors.dim = kDim;
  options.vector_model = kModel;
  options.metadata_index = metadata_index;
  f.shard = std::make_unique<MemoryShard>(&f.analyzer, options);
  Corpus corpus;
  for (size_t i = 0; i < kMemories; ++i) {
    MemoryRecord r = AliceMemory(i);
    r.agent_id = "assistant";
    r.text = corpus.Memory();
    r.metadata_json = nlohmann::json{{"topic", "t" + std::to_string(i % kTopics)},
                                     {"source", "chat"},
                                     {"importance", static_cast<int>(i % 5)}}
                          .dump();
    if (vectors) {
      r.vector = corpus.UnitVector();
      r.vector_model = kModel;
    }
    f.shard->Upsert(r);
  }
  for (int q = 0; q < 500; ++q) {
    f.queries.push_back(f.analyzer.AnalyzeQuery(corpus.Query()));
    if (vectors) f.query_vectors.push_back(corpus.UnitVector());
  }
  f.user_only.AndEquals("user_id", "alice");
  const std::string median =
      FormatIsoMicros(kStartUs + static_cast<int64_t>(kMemories / 2) * kStepUs);
  auto parsed = MemoryFilter::Parse(
      nlohmann::json{{"AND", {{{"metadata.topic", "t3"}}, {{"created_at", {{"gte", median}}}}}}},
      "filters", {});
  if (!parsed.ok()) std::abort();
  f.filtered = std::move(parsed).value();
  f.filtered.AndEquals("user_id", "alice");
  return *slot;
}

using Clock = std::chrono::steady_clock;

// The last run of each benchmark: latencies of all its threads, and when its first search began
// and its last ended (for the throughput).
struct Run {
  std::vector<double> latencies_us;
  Clock::time_point first = Clock::time_point::max();
  Clock::time_point last = Clock::time_point::min();
  int threads = 1;
};
Mutex runs_mu;
std::map<std::string, Run> runs GUARDED_BY(runs_mu);

// Args: vectors (0 BM25 only, 1 with vectors), filter (0 user_id only, 1 metadata + date),
// index (MemoryShardOptions::metadata_index).
void BM_Search(benchmark::State& state) {
  const bool vectors = state.range(0) != 0;
  const bool filtered = state.range(1) != 0;
  const bool index = state.range(2) != 0;
  const Fixture& f = GetFixture(vectors, index);
  const std::string key = std::string(vectors ? "bm25+vectors" : "bm25") +
                          (filtered ? " filter:topic+date" : " filter:user_id") +
                          " index:" + (index ? "on " : "off") +
                          " threads:" + std::to_string(state.threads());
  if (state.thread_index() == 0) {
    MutexLock lock(&runs_mu);
    runs[key] = Run{.threads = state.threads()};
  }
  std::vector<double> mine;
  Clock::time_point first = Clock::time_point::max();
  size_t q = static_cast<size_t>(state.thread_index()) * 37;
  size_t hits = 0;
  for (auto _ : state) {
    const size_t i = q++ % f.queries.size();
    MemoryQuery query{.terms = f.queries[i],
                      .vector = vectors ? f.query_vectors[i] : std::vector<float>{},
                      .filter = filtered ? &f.filtered : &f.user_only,
                      .k = 10,
                      .now_us = kStartUs + static_cast<int64_t>(kMemories) * kStepUs};
    const auto start = Clock::now();
    first = std::min(first, start);
    auto result = f.shard->Search(query);
    mine.push_back(
        std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - start)
            .count());
    if (!result.ok()) {
      state.SkipWithError(result.status().ToString().c_str());
      break;
    }
    hits += result->size();
  }
  {
    MutexLock lock(&runs_mu);
    Run& run = runs[key];
    run.latencies_us.insert(run.latencies_us.end(), mine.begin(), mine.end());
    run.first = std::min(run.first, first);
    run.last = std::max(run.last, Clock::now());
  }
  auto same = [](double v) { return benchmark::Counter(v, benchmark::Counter::kAvgThreads); };
  state.counters["mem_bytes/doc"] =
      same(static_cast<double>(f.shard->MemoryBytes()) / static_cast<double>(kMemories));
  state.counters["hits/search"] =
      same(static_cast<double>(hits) / static_cast<double>(std::max<size_t>(1, mine.size())));
}
BENCHMARK(BM_Search)
    ->ArgsProduct({{0, 1}, {0, 1}, {0, 1}})
    ->ArgNames({"vectors", "filter", "index"})
    ->Unit(benchmark::kMicrosecond)
    ->UseRealTime()
    ->Threads(1)
    ->Iterations(1000);
BENCHMARK(BM_Search)
    ->ArgsProduct({{0, 1}, {0, 1}, {0, 1}})
    ->ArgNames({"vectors", "filter", "index"})
    ->Unit(benchmark::kMicrosecond)
    ->UseRealTime()
    ->Threads(16)
    ->Iterations(500);

// Listing a user's named entities (MemoryShard::NamedEntities) over 10,000 memories of about 80
// words (about 500 bytes) naming 3 of 300 people each, mid-sentence. Arg "kept" 0: a listing of a
// shard no listing has read (every text is read for its mentions); 1: a listing after another
// (the mentions kept from it).
void BM_NamedEntities(benchmark::State& state) {
  const bool kept = state.range(0) != 0;
  Analyzer analyzer;
  std::mt19937_64 rng(11);
  ZipfVocabulary words({.size = kVocabulary, .min_length = 3, .max_length = 9}, rng);
  std::vector<std::string> people;
  for (int i = 0; i < 300; ++i) {
    std::string name = words.Content(rng);
    name[0] = static_cast<char>(name[0] - 'a' + 'A');
    people.push_back(std::move(name));
  }
  std::uniform_int_distribution<size_t> person(0, people.size() - 1);
  std::vector<MemoryRecord> records;
  for (size_t i = 0; i < kMemories; ++i) {
    MemoryRecord r = AliceMemory(i);
    r.text = "the user";
    for (int w = 0; w < 80; ++w) {
      r.text += ' ';
      r.text += w % 27 == 13 ? people[person(rng)] : words.Any(rng);
    }
    r.text += '.';
    records.push_back(std::move(r));
  }
  MemoryFilter alice;
  alice.AndEquals("user_id", "alice");
  std::unique_ptr<MemoryShard> shard;
  auto fresh = [&] {
    shard = std::make_unique<MemoryShard>(&analyzer, MemoryShardOptions{});
    for (const MemoryRecord& r : records) shard->Upsert(r);
  };
  fresh();
  const size_t unlisted_bytes = shard->MemoryBytes();
  if (kept) shard->NamedEntities(alice, kStartUs);
  size_t entities = 0;
  for (auto _ : state) {
    if (!kept) {
      state.PauseTiming();
      fresh();
      state.ResumeTiming();
    }
    entities = shard->NamedEntities(alice, kStartUs).size();
  }
  state.counters["entities"] = static_cast<double>(entities);
  state.counters["mem_bytes/doc"] =
      static_cast<double>(shard->MemoryBytes()) / static_cast<double>(kMemories);
  // What the kept mentions add to the shard (its budget counts them).
  state.counters["kept_bytes/doc"] =
      (static_cast<double>(shard->MemoryBytes()) - static_cast<double>(unlisted_bytes)) /
      static_cast<double>(kMemories);
}
BENCHMARK(BM_NamedEntities)
    ->Arg(0)
    ->Arg(1)
    ->ArgName("kept")
    ->Unit(benchmark::kMillisecond)
    ->Iterations(5);

void PrintLatencies() {
  // With 16 threads on a 2-core machine a search's wall time includes waiting for a core (the
  // scheduler's time slices of other threads: the p99 of those runs measures the scheduler). The
  // closed-loop mean latency of 16 clients follows from the throughput (Little's law):
  // 16 / (searches per second).
  std::printf(
      "\nSearch latency over all threads of each run (us), throughput (searches/s) and,\n"
      "by Little's law, the mean latency of that many closed-loop clients (us):\n");
  std::printf("%-52s %8s %8s %8s %8s %9s %9s\n", "benchmark", "p50", "p90", "p99", "max",
              "search/s", "mean@N");
  MutexLock lock(&runs_mu);  // the benchmarks have finished: uncontended
  for (auto& [name, run] : runs) {
    std::vector<double>& values = run.latencies_us;
    if (values.empty()) continue;
    std::sort(values.begin(), values.end());
    auto at = [&values](double p) {
      return values[std::min(values.size() - 1, static_cast<size_t>(p * values.size()))];
    };
    const double seconds = std::chrono::duration<double>(run.last - run.first).count();
    const double rate = static_cast<double>(values.size()) / seconds;
    std::printf("%-52s %8.1f %8.1f %8.1f %8.1f %9.0f %9.1f\n", name.c_str(), at(0.5), at(0.9),
                at(0.99), values.back(), rate, 1e6 * run.threads / rate);
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
