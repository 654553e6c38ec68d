#include "modules/embedding_module.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <filesystem>
#include <thread>
#include <utility>
#include <vector>

#include "api/metrics.h"
#include "embed/batching_embedder.h"
#include "embed/metered_embedder.h"
#include "embed/openai_embedder.h"
#include "embed/query_embedding_cache.h"
#include "embed/simd_kernels.h"
#include "embed/use_lite.h"
#include "modules/startup.h"

namespace engram {

std::string DefaultModelDir() {
  std::error_code ec;
  auto exe = std::filesystem::read_symlink("/proc/self/exe", ec);
  if (ec) return "third_party/model/package/dist";
  const std::filesystem::path prefix = exe.parent_path().parent_path();
  const std::filesystem::path installed = prefix / "share/engram/model";
  if (std::filesystem::exists(installed / "model.json", ec)) return installed.string();
  return (prefix / "third_party/model/package/dist").string();
}

namespace {

// The built-in model's product kernels for --embed-precision on this kernel family.
Result<const KernelTable*> ModelKernels(const std::string& precision, KernelFamily family) {
  auto tables = TablesOfKernelFamily(family);
  if (!tables.ok()) return ConfigurationError(tables.status().message());
  if (precision == "auto") {
    // int8 products where they are measured (or, for AVX-VNNI, built) to beat float32 at the
    // same recall: AVX512_VNNI ~6x, AVX2 ~1.8x per short text. AVX2 int8 against AVX-512
    // float32 is not measured, and plain C++ int8 is slower than float32: float32 there. The
    // vectors' model id records which (see --embed-precision).
    const KernelIsa int8 = tables->int8->isa;
    const bool faster = int8 == KernelIsa::kAvx512Int8 || int8 == KernelIsa::kAvxVnniInt8 ||
                        (int8 == KernelIsa::kAvx2Int8 && family == KernelFamily::kAvx2);
    return faster ? tables->int8 : tables->fp32;
  }
  if (precision == "bf16") {
    if (tables->bf16 == nullptr) {
      return ConfigurationError(fmt::format(
          "--embed-precision bf16 needs a CPU with AVX512_BF16 and the avx512 kernel family; "
          "this one runs {}",
          KernelFamilyName(family)));
    }
    return tables->bf16;
  }
  if (precision == "int8") return tables->int8;
  return tables->fp32;
}

std::string_view PrecisionName(KernelPrecision precision) {
  switch (precision) {
    case KernelPrecision::kInt8:
      return "int8";
    case KernelPrecision::kBf16:
      return "bfloat16";
    default:
      return "float32";
  }
}

}  // namespace

EmbeddingModule::~EmbeddingModule() = default;

const Embedder* EmbeddingModule::background() const { return metered_.get(); }

Result<std::unique_ptr<EmbeddingModule>> EmbeddingModule::Build(const ServeOptions& options,
                                                                KernelFamily family) {
  std::unique_ptr<EmbeddingModule> m(new EmbeddingModule());
  int max_leaders = 0;
  if (options.embedder == "builtin") {
    std::string dir = options.model_dir.empty() ? DefaultModelDir() : options.model_dir;
    UseLiteOptions model_options;
    auto kernels = ModelKernels(options.embed_precision, family);
    if (!kernels.ok()) return kernels.status();
    model_options.kernels = *kernels;
    spdlog::info("built-in model: {} products on the {} kernels (--embed-precision {})",
                 PrecisionName(model_options.kernels->precision), KernelFamilyName(family),
                 options.embed_precision);
    auto loaded = UseLiteEmbedder::Load(dir, model_options);
    if (!loaded.ok()) {
      return StartFailure(
          fmt::format("cannot load the built-in embedding model from {}: {} (run scripts/setup.sh, "
                      "or pass --model-dir, or --embedder none for BM25 only)",
                      dir, loaded.status().ToString()));
    }
    m->model_ = std::move(*loaded);
    // Concurrent callers (searches, event workers) share model passes, one pass per core at a
    // time.
    max_leaders = static_cast<int>(std::thread::hardware_concurrency());
  } else if (options.embedder == "openai") {
    auto remote = OpenAiEmbedder::Create(
        {.base_url = options.embed_url,
         .model = options.embed_model,
         .api_key = options.embed_api_key,
         .dimensions = options.embed_dimensions,
         .request_timeout = std::chrono::milliseconds(options.embed_timeout_ms),
         .max_retries = options.embed_retries});
    if (!remote.ok()) {
      return StartFailure("cannot use the embedding endpoint: " + remote.status().ToString());
    }
    m->model_ = std::move(*remote);
    // Requests to the endpoint wait on the network, not on a core: a few may be in flight.
    max_leaders = 4;
  } else {
    return m;  // --embedder none: BM25 only
  }
  m->metered_ = std::make_unique<MeteredEmbedder>(m->model_.get());
  m->batching_ = std::make_unique<BatchingEmbedder>(
      m->metered_.get(), BatchingEmbedderOptions{.max_leaders = max_leaders});
  // Search queries repeat, stored texts rarely do: the cache answers EmbedQuery only.
  auto cache = std::make_unique<CachingEmbedder>(
      m->batching_.get(),
      QueryEmbeddingCacheOptions{.max_entries = static_cast<size_t>(options.query_cache_entries)});
  m->query_cache_ = cache.get();
  m->search_ = std::move(cache);
  spdlog::info("embedder: {} ({} dimensions)", m->search_->model_id(), m->search_->dimension());
  return m;
}

EmbeddingModule::Stats EmbeddingModule::stats() const {
  Stats s;
  if (metered_ != nullptr) {
    s.metered = true;
    const EmbedLaneUsage request = metered_->usage(EmbedLane::kRequest);
    const EmbedLaneUsage background = metered_->usage(EmbedLane::kBackground);
    s.request_nanos = request.nanos;
    s.request_texts = request.texts;
    s.request_batches = request.batches;
    s.background_nanos = background.nanos;
    s.background_texts = background.texts;
    s.background_batches = background.batches;
  }
  if (query_cache_ != nullptr) {
    s.query_cache = true;
    s.cache_hits = query_cache_->hits();
    s.cache_misses = query_cache_->misses();
    s.cache_entries = query_cache_->size();
  }
  return s;
}

void EmbeddingModule::AppendMetrics(std::string& out) const {
  const Stats s = stats();
  if (s.query_cache) {
    AppendMetric(out, "counter", "engram_query_embedding_cache_hits_total",
                 "Search queries whose vector came from the query embedding cache.", s.cache_hits);
    AppendMetric(out, "counter", "engram_query_embedding_cache_misses_total",
                 "Search queries embedded by the model (not in the query embedding cache).",
                 s.cache_misses);
    AppendMetric(out, "gauge", "engram_query_embedding_cache_entries",
                 "Query vectors held in the query embedding cache.", s.cache_entries);
  }
  if (!s.metered) return;
  auto lanes = [](double request, double background) {
    return std::vector<std::pair<std::string_view, double>>{{"request", request},
                                                            {"background", background}};
  };
  AppendLabelledMetric(out, "counter", "engram_embed_seconds_total",
                       "Wall seconds spent inside the embedding model, by lane.", "lane",
                       lanes(s.request_nanos / 1e9, s.background_nanos / 1e9));
  AppendLabelledMetric(
      out, "counter", "engram_embed_texts_total", "Texts embedded by the model, by lane.", "lane",
      lanes(static_cast<double>(s.request_texts), static_cast<double>(s.background_texts)));
  AppendLabelledMetric(
      out, "counter", "engram_embed_batches_total", "Model passes (batches of texts), by lane.",
      "lane",
      lanes(static_cast<double>(s.request_batches), static_cast<double>(s.background_batches)));
}

}  // namespace engram
