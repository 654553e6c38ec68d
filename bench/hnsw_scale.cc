// hnsw_scale: one scope's vector index grown to a million vectors, the path a search takes once a
// scope has more than `hnsw_threshold` vectors (src/index/vector_index.h).
//
// Reads texts (one per line) and queries (one per line), embeds both with the built-in model on
// every core (the vectors are cached in a file, so a second run skips the model), then inserts the
// texts' vectors one by one into two indexes of the same int8 codes: the product's (an HNSW graph
// once the threshold is reached, default options) and an exact scan (threshold 0). At each size
// named by --sizes it prints one JSON line: the insert time so far (what growing by single adds
// costs), memory, the latency of each query on one thread for k = 10 and k = 200 (the hybrid search
// asks each retriever for 200 candidates), and the HNSW answer's recall against the exact one.
// With --load, each size is instead a fresh index loaded as one batch (VectorIndex::BeginBatch),
// as a shard's load is, its graph built at the end on --build-threads threads: "insert_s" is then
// that load's time, what the first search after a start waits for. With --load and --graph-file,
// each size's graph is then saved there (VectorIndex::SaveGraph) and a second fresh index loads
// the same vectors, its first build starting from the saved graph: "save_s", "graph_file_bytes",
// "reload_searchable_s" / "reload_s" (until the graph answers), the vectors taken from the file
// and that index's k = 10 figures, to compare with the build's; then 200 of its vectors, spread
// over the file, are removed one by one: "remove_p50_ms" / "remove_p99_ms" time a removal that
// zeroes the vector's code in the saved file (VectorIndex::Remove, HnswGraph::ZeroSavedElements;
// the file was just written, so its blocks are read from the page cache).
//
// bench/hnsw_scale.py prepares the texts and queries from the dev datasets and prints the table.
#include <CLI/CLI.hpp>
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <memory>
#include <sstream>
#include <string>
#include <thread>
#include <unordered_set>
#include <vector>

#include "common/mutex.h"
#include "embed/use_lite.h"
#include "index/vector_index.h"

namespace engram {
namespace {

using Clock = std::chrono::steady_clock;

double Seconds(Clock::time_point since) {
  return std::chrono::duration<double>(Clock::now() - since).count();
}

std::vector<std::string> ReadLines(const std::string& path, size_t limit) {
  std::vector<std::string> lines;
  std::ifstream in(path);
  std::string line;
  while (lines.size() < limit && std::getline(in, line)) {
    if (!line.empty()) lines.push_back(std::move(line));
  }
  return lines;
}

// FNV-1a over every text and its length: a cache file is reused only for the same texts.
uint64_t TextsHash(const std::vector<std::string>& texts) {
  uint64_t h = 1469598103934665603ull;
  auto mix = [&](const char* p, size_t n) {
    for (size_t i = 0; i < n; ++i) h = (h ^ static_cast<unsigned char>(p[i])) * 1099511628211ull;
  };
  for (const auto& t : texts) {
    const uint64_t n = t.size();
    mix(reinterpret_cast<const char*>(&n), sizeof n);
    mix(t.data(), t.size());
  }
  return h;
}

// Cache layout: magic, text hash, count, dimension, then count * dimension floats.
constexpr uint64_t kCacheMagic = 0x31434556534e4845ull;  // "EHNSVEC1"

bool LoadCache(const std::string& path, uint64_t hash, size_t n, int dim, std::vector<float>* out) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return false;
  uint64_t header[4];
  if (!in.read(reinterpret_cast<char*>(header), sizeof header)) return false;
  if (header[0] != kCacheMagic || header[1] != hash || header[2] != n ||
      header[3] != static_cast<uint64_t>(dim)) {
    return false;
  }
  out->resize(n * static_cast<size_t>(dim));
  return static_cast<bool>(
      in.read(reinterpret_cast<char*>(out->data()), static_cast<std::streamsize>(out->size() * 4)));
}

void SaveCache(const std::string& path, uint64_t hash, size_t n, int dim,
               const std::vector<float>& vectors) {
  const std::string tmp = path + ".tmp";
  std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
  const uint64_t header[4] = {kCacheMagic, hash, n, static_cast<uint64_t>(dim)};
  out.write(reinterpret_cast<const char*>(header), sizeof header);
  out.write(reinterpret_cast<const char*>(vectors.data()),
            static_cast<std::streamsize>(vectors.size() * 4));
  out.close();
  if (out) std::rename(tmp.c_str(), path.c_str());
}

// Embeds `texts` on `threads` threads, batches of 64, into one row-major array.
Result<std::vector<float>> EmbedAll(const UseLiteEmbedder& model,
                                    const std::vector<std::string>& texts, int threads) {
  constexpr size_t kBatch = 64;
  const size_t dim = static_cast<size_t>(model.dimension());
  std::vector<float> vectors(texts.size() * dim);
  std::atomic<size_t> next{0};
  std::atomic<size_t> done{0};
  std::atomic<bool> failed{false};
  Mutex error_mu;
  Status first_error;  // the first batch that failed; written once, under error_mu
  const auto start = Clock::now();
  auto work = [&] {
    for (;;) {
      const size_t begin = next.fetch_add(kBatch);
      if (begin >= texts.size() || failed) return;
      const size_t end = std::min(texts.size(), begin + kBatch);
      std::vector<std::string> batch(texts.begin() + static_cast<long>(begin),
                                     texts.begin() + static_cast<long>(end));
      auto embedded = model.EmbedBatch(batch);
      if (!embedded.ok()) {
        MutexLock lock(&error_mu);
        if (!failed.exchange(true)) first_error = embedded.status();
        return;
      }
      for (size_t i = 0; i < embedded->size(); ++i) {
        std::copy((*embedded)[i].begin(), (*embedded)[i].end(),
                  vectors.begin() + (begin + i) * dim);
      }
      const size_t total = done.fetch_add(end - begin) + (end - begin);
      if (total / 50000 != (total - (end - begin)) / 50000) {
        std::cerr << "embedded " << total << "/" << texts.size() << " in " << Seconds(start)
                  << " s\n";
      }
    }
  };
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t) pool.emplace_back(work);
  for (auto& t : pool) t.join();
  if (failed) return first_error;  // every thread has joined
  return vectors;
}

double Percentile(std::vector<double> v, double p) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const size_t i = std::min(v.size() - 1, static_cast<size_t>(p * static_cast<double>(v.size())));
  return v[i];
}

size_t RssBytes() {
  std::ifstream in("/proc/self/status");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("VmRSS:", 0) == 0) return std::stoull(line.substr(6)) * 1024;
  }
  return 0;
}

struct KResult {
  double hnsw_p50_ms = 0, hnsw_p99_ms = 0, exact_p50_ms = 0, exact_p99_ms = 0, recall = 0;
};

// Every query against both indexes, one at a time on this thread.
KResult Measure(const VectorIndex& product, const VectorIndex& exact,
                const std::vector<float>& queries, int dim, size_t k) {
  std::vector<double> product_ms, exact_ms;
  size_t found = 0, wanted = 0;
  const size_t n = queries.size() / static_cast<size_t>(dim);
  for (size_t q = 0; q < n; ++q) {
    const float* v = queries.data() + q * static_cast<size_t>(dim);
    auto t0 = Clock::now();
    const auto approximate = product.Search(v, k);
    product_ms.push_back(Seconds(t0) * 1e3);
    t0 = Clock::now();
    const auto truth = exact.Search(v, k);
    exact_ms.push_back(Seconds(t0) * 1e3);
    std::unordered_set<DocId> truth_ids;
    for (const auto& hit : truth) truth_ids.insert(hit.doc);
    for (const auto& hit : approximate) found += truth_ids.count(hit.doc);
    wanted += truth.size();
  }
  KResult r;
  r.hnsw_p50_ms = Percentile(product_ms, 0.50);
  r.hnsw_p99_ms = Percentile(product_ms, 0.99);
  r.exact_p50_ms = Percentile(exact_ms, 0.50);
  r.exact_p99_ms = Percentile(exact_ms, 0.99);
  r.recall = wanted == 0 ? 0 : static_cast<double>(found) / static_cast<double>(wanted);
  return r;
}

int Run(int argc, char** argv) {
  CLI::App app{"One scope's vector index grown to a million vectors: HNSW next to the exact scan"};
  std::string texts_path, queries_path, cache_path, model_dir = "third_party/model/package/dist";
  std::vector<size_t> sizes{20000, 100000, 300000, 1000000};
  int threads = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  size_t max_queries = 500;
  VectorIndexOptions options;
  app.add_option("--texts", texts_path, "texts, one per line")->required();
  app.add_option("--queries", queries_path, "queries, one per line")->required();
  app.add_option("--cache", cache_path, "vector cache file (reused when the texts are the same)");
  app.add_option("--model-dir", model_dir, "the built-in model's package/dist");
  app.add_option("--sizes", sizes, "index sizes to measure at")->delimiter(',');
  app.add_option("--threads", threads, "embedding threads");
  app.add_option("--max-queries", max_queries, "queries measured");
  app.add_option("--hnsw-threshold", options.hnsw_threshold, "vectors before the graph is built");
  app.add_option("--hnsw-m", options.hnsw_m);
  app.add_option("--hnsw-ef-construction", options.hnsw_ef_construction);
  app.add_option("--hnsw-ef-search", options.hnsw_ef_search);
  bool load = false;
  app.add_flag("--load", load, "load each size as one batch instead of growing one index");
  app.add_option("--build-threads", options.hnsw_build_threads, "graph threads (0: every core)");
  app.add_option("--graph-file", options.graph_file,
                 "with --load: save each size's graph here and time a load that starts from it");
  CLI11_PARSE(app, argc, argv);
  std::sort(sizes.begin(), sizes.end());

  auto loaded = UseLiteEmbedder::Load(model_dir);
  if (!loaded.ok()) {
    std::cerr << "model: " << loaded.status().ToString() << "\n";
    return 1;
  }
  const UseLiteEmbedder& model = **loaded;
  const int dim = model.dimension();
  options.dim = dim;

  const auto texts = ReadLines(texts_path, sizes.back());
  const auto query_texts = ReadLines(queries_path, max_queries);
  if (texts.empty() || query_texts.empty()) {
    std::cerr << "no texts or no queries\n";
    return 1;
  }
  std::vector<float> vectors;
  const uint64_t hash = TextsHash(texts);
  double embed_seconds = 0;
  if (cache_path.empty() || !LoadCache(cache_path, hash, texts.size(), dim, &vectors)) {
    const auto start = Clock::now();
    auto embedded = EmbedAll(model, texts, threads);
    if (!embedded.ok()) {
      std::cerr << "embedding: " << embedded.status().ToString() << "\n";
      return 1;
    }
    vectors = std::move(embedded).value();
    embed_seconds = Seconds(start);
    if (!cache_path.empty()) SaveCache(cache_path, hash, texts.size(), dim, vectors);
  }
  auto queries = EmbedAll(model, query_texts, threads);
  if (!queries.ok()) {
    std::cerr << "embedding queries: " << queries.status().ToString() << "\n";
    return 1;
  }

  auto product = std::make_unique<VectorIndex>(options);
  VectorIndexOptions exact_options = options;
  exact_options.hnsw_threshold = 0;
  VectorIndex exact(exact_options);
  // insert_s: until the graph answers; searchable_s: until a search can run (the load's end; the
  // exact scan answers while the graph is built in the background).
  double insert_seconds = 0, searchable_seconds = 0;
  size_t inserted = 0;
  // A fresh index holding the first `size` vectors, loaded as one batch: the seconds until a
  // search can run and until the graph answers.
  auto load_fresh = [&](size_t size, double* searchable, double* ready) {
    auto index = std::make_unique<VectorIndex>(options);
    const auto t0 = Clock::now();
    index->BeginBatch();
    for (size_t i = 0; i < size; ++i) {
      index->Set(static_cast<DocId>(i), vectors.data() + i * static_cast<size_t>(dim));
    }
    index->EndBatch();
    *searchable = Seconds(t0);
    index->WaitForGraph();
    *ready = Seconds(t0);
    return index;
  };
  for (size_t size : sizes) {
    size = std::min(size, texts.size());
    if (load) {
      product.reset();
      // Built from scratch: no graph of an earlier size to start from.
      if (!options.graph_file.empty()) {
        std::filesystem::remove(options.graph_file);
        std::filesystem::remove(options.graph_file + ".meta");
      }
      product = load_fresh(size, &searchable_seconds, &insert_seconds);
    }
    for (; inserted < size; ++inserted) {
      const float* v = vectors.data() + inserted * static_cast<size_t>(dim);
      if (!load) {
        const auto t0 = Clock::now();
        product->Set(static_cast<DocId>(inserted), v);
        insert_seconds += Seconds(t0);
      }
      exact.Set(static_cast<DocId>(inserted), v);
    }
    if (!load) {
      searchable_seconds = insert_seconds;
      const auto t0 = Clock::now();
      product->WaitForGraph();
      insert_seconds += Seconds(t0);
    }
    const KResult k10 = Measure(*product, exact, *queries, dim, 10);
    const KResult k200 = Measure(*product, exact, *queries, dim, 200);
    std::ostringstream line;
    line << "{\"vectors\":" << inserted << ",\"load\":" << (load ? "true" : "false")
         << ",\"queries\":" << query_texts.size()
         << ",\"uses_hnsw\":" << (product->uses_hnsw() ? "true" : "false")
         << ",\"insert_s\":" << insert_seconds << ",\"searchable_s\":" << searchable_seconds
         << ",\"embed_s\":" << embed_seconds << ",\"index_bytes\":" << product->MemoryBytes()
         << ",\"exact_bytes\":" << exact.MemoryBytes() << ",\"rss_bytes\":" << RssBytes();
    for (const auto& [name, r] : {std::pair{"k10", k10}, std::pair{"k200", k200}}) {
      line << ",\"" << name << "\":{\"hnsw_p50_ms\":" << r.hnsw_p50_ms
           << ",\"hnsw_p99_ms\":" << r.hnsw_p99_ms << ",\"exact_p50_ms\":" << r.exact_p50_ms
           << ",\"exact_p99_ms\":" << r.exact_p99_ms << ",\"recall\":" << r.recall << "}";
    }
    if (load && !options.graph_file.empty()) {
      const auto t0 = Clock::now();
      const Status saved = product->SaveGraph();
      const double save_seconds = Seconds(t0);
      if (!saved.ok()) {
        std::cerr << "saving the graph: " << saved.ToString() << "\n";
        return 1;
      }
      const uintmax_t file_bytes = std::filesystem::file_size(options.graph_file);
      double reload_searchable = 0, reload_ready = 0;
      auto reloaded = load_fresh(size, &reload_searchable, &reload_ready);
      const KResult r10 = Measure(*reloaded, exact, *queries, dim, 10);
      std::vector<double> remove_ms;
      constexpr size_t kRemovals = 200;
      // Only a graph taken from the file has its elements there to zero.
      const bool from_file = reloaded->graph_adopted() > 0;
      for (size_t i = 0; i < kRemovals && size >= kRemovals && from_file; ++i) {
        const auto r0 = Clock::now();
        reloaded->Remove(static_cast<DocId>(i * (size / kRemovals)));
        remove_ms.push_back(Seconds(r0) * 1000);
      }
      std::sort(remove_ms.begin(), remove_ms.end());
      auto at = [&remove_ms](double q) {
        return remove_ms.empty() ? 0.0 : remove_ms[static_cast<size_t>(q * (remove_ms.size() - 1))];
      };
      line << ",\"remove_p50_ms\":" << at(0.5) << ",\"remove_p99_ms\":" << at(0.99);
      line << ",\"save_s\":" << save_seconds << ",\"graph_file_bytes\":" << file_bytes
           << ",\"reload_searchable_s\":" << reload_searchable << ",\"reload_s\":" << reload_ready
           << ",\"reload_adopted\":" << reloaded->graph_adopted()
           << ",\"reload_k10\":{\"hnsw_p50_ms\":" << r10.hnsw_p50_ms
           << ",\"hnsw_p99_ms\":" << r10.hnsw_p99_ms << ",\"recall\":" << r10.recall << "}";
    }
    line << "}";
    std::cout << line.str() << std::endl;
    if (inserted == texts.size()) break;
  }
  return 0;
}

}  // namespace
}  // namespace engram

int main(int argc, char** argv) { return engram::Run(argc, argv); }
