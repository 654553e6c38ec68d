#include "cli/serve_command.h"

#include <fmt/format.h>
#include <signal.h>
#include <spdlog/spdlog.h>
#include <sys/resource.h>

#include <algorithm>
#include <array>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <iterator>
#include <string_view>
#include <thread>

#include "api/app.h"
#include "api/kb_api.h"
#include "api/leaderboard_api.h"
#include "api/mem0/mem0_api.h"
#include "api/memory_api.h"
#include "api/openapi_check.h"
#include "api/ops_api.h"
#include "api/skills_api.h"
#include "common/build_info.h"
#include "core/kb_service.h"
#include "core/leaderboard_janitor.h"
#include "core/leaderboard_service.h"
#include "core/memory_service.h"
#include "core/shard_budget.h"
#include "core/shard_registry.h"
#include "core/skill_service.h"
#include "core/vector_backfill.h"
#include "embed/batching_embedder.h"
#include "embed/metered_embedder.h"
#include "embed/openai_embedder.h"
#include "embed/query_embedding_cache.h"
#include "embed/simd_kernels.h"
#include "embed/use_lite.h"
#include "extract/llm_extractor.h"
#include "extract/llm_reranker.h"
#include "extract/ocr/image_text.h"
#include "extract/rule_based_extractor.h"
#include "extract/skill_llm_extractor.h"
#include "index/analyzer.h"
#include "mcp/mcp_service.h"
#include "server/http_server.h"
#include "store/pg_store.h"
#include "store/sqlite_store.h"

namespace engram {

// The built-in model beside the binary: installed, PREFIX/bin/engram finds it in
// PREFIX/share/engram/model; in a build tree, build/engram in third_party/model/package/dist.
std::string DefaultModelDir() {
  std::error_code ec;
  auto exe = std::filesystem::read_symlink("/proc/self/exe", ec);
  if (ec) return "third_party/model/package/dist";
  const std::filesystem::path prefix = exe.parent_path().parent_path();
  const std::filesystem::path installed = prefix / "share/engram/model";
  if (std::filesystem::exists(installed / "model.json", ec)) return installed.string();
  return (prefix / "third_party/model/package/dist").string();
}

// The --llm-* endpoint as every LLM user (extractors, reranker) starts from.
ChatClientOptions LlmChatOptions(const ServeOptions& options) {
  ChatClientOptions chat;
  chat.base_url = options.llm_url;
  chat.model = options.llm_model;
  chat.api_key = options.llm_api_key;
  chat.request_timeout = std::chrono::milliseconds(options.llm_timeout_ms);
  chat.max_retries = options.llm_retries;
  return chat;
}

// The transport's connection and body-budget figures.
void AppendTransportMetrics(const HttpServer::Stats& s, std::string& out) {
  AppendMetric(out, "gauge", "engram_http_open_connections", "Open client connections.",
               s.open_connections);
  AppendMetric(out, "gauge", "engram_http_inflight_body_bytes",
               "Request body bytes being received or held by requests in flight.",
               s.inflight_body_bytes);
  fmt::format_to(std::back_inserter(out),
                 "# HELP engram_http_refused_connections_total Connections answered 503 and "
                 "closed at once.\n# TYPE engram_http_refused_connections_total counter\n"
                 "engram_http_refused_connections_total{{reason=\"max_connections\"}} {}\n"
                 "engram_http_refused_connections_total{{reason=\"per_client\"}} {}\n",
                 s.refused_connections, s.refused_connections_per_client);
  AppendMetric(out, "counter", "engram_http_idle_closed_total",
               "Idle connections closed to admit new ones at --max-connections.",
               s.closed_idle_for_new);
  AppendMetric(out, "counter", "engram_http_body_budget_refused_total",
               "Requests answered 503 because --max-inflight-body-bytes was in use.",
               s.refused_body_budget);
  AppendMetric(out, "counter", "engram_http_refused_before_body_total",
               "Requests answered from their head alone (no route, no valid key, unsupported "
               "encoding), their body never read.",
               s.refused_before_body);
}

// One unlabelled Prometheus histogram from cumulative per-bucket counts.
template <size_t N>
void AppendHistogram(std::string& out, std::string_view name, std::string_view help,
                     const std::array<double, N>& bounds, const std::array<uint64_t, N>& le,
                     uint64_t count, double sum) {
  out += fmt::format("# HELP {} {}\n# TYPE {} histogram\n", name, help, name);
  for (size_t i = 0; i < N; ++i) {
    out += fmt::format("{}_bucket{{le=\"{}\"}} {}\n", name, bounds[i], le[i]);
  }
  out += fmt::format("{}_bucket{{le=\"+Inf\"}} {}\n", name, count);
  out += fmt::format("{}_sum {:.6f}\n", name, sum);
  out += fmt::format("{}_count {}\n", name, count);
}

// The group commit's figures (SQLite): how many writes share a commit and how long commits take,
// which is most of an add's acknowledgement.
void AppendWritePathMetrics(const Store::Stats& s, std::string& out) {
  out += "# HELP engram_store_commits_total Transactions committed by the store's writer.\n";
  out += "# TYPE engram_store_commits_total counter\n";
  out += "engram_store_commits_total " + std::to_string(s.commits) + "\n";
  out += "# HELP engram_store_writes_total Writes carried by those commits (group commit).\n";
  out += "# TYPE engram_store_writes_total counter\n";
  out += "engram_store_writes_total " + std::to_string(s.writes) + "\n";
  AppendHistogram(out, "engram_store_commit_duration_seconds",
                  "One group transaction, BEGIN to synced COMMIT.", s.kCommitBuckets, s.commit_le,
                  s.commits, s.commit_seconds);
  out += "# HELP engram_store_checkpoints_total WAL checkpoints, by the background thread or ";
  out += "inside a commit.\n# TYPE engram_store_checkpoints_total counter\n";
  out += fmt::format("engram_store_checkpoints_total{{by=\"background\"}} {}\n",
                     s.checkpoints_background);
  out +=
      fmt::format("engram_store_checkpoints_total{{by=\"commit\"}} {}\n", s.checkpoints_in_commit);
  if (!s.intake) return;
  // The intake journal: an add's acknowledgement waits for one of its syncs.
  const IntakeJournal::Stats& j = *s.intake;
  out += "# HELP engram_intake_records_total Memory events made durable by the intake journal.\n";
  out += "# TYPE engram_intake_records_total counter\n";
  out += fmt::format("engram_intake_records_total {}\n", j.records);
  out +=
      "# HELP engram_intake_refused_total Memory events refused because the journal could not "
      "write (out of disk space, or failed).\n# TYPE engram_intake_refused_total counter\n";
  out += fmt::format("engram_intake_refused_total {}\n", j.refused);
  AppendHistogram(out, "engram_intake_sync_duration_seconds",
                  "One group of journal records, write to synced.", j.kSyncBuckets, j.sync_le,
                  j.syncs, j.sync_seconds);
  out +=
      "# HELP engram_intake_files Intake journal files on disk (the current one and any holding "
      "events not yet ended).\n";
  out += "# TYPE engram_intake_files gauge\n";
  out += fmt::format("engram_intake_files {}\n", j.live_files);
}

// SQLite in the data directory, or PostgreSQL shared with other nodes when a URL is given.
Result<std::unique_ptr<Store>> OpenStore(const ServeOptions& options) {
  if (!options.store_url.empty()) {
    auto pg = PgStore::Open({.url = options.store_url,
                             .connections = options.store_connections,
                             .node_id = options.node_id,
                             .lease = std::chrono::milliseconds(options.job_lease_ms)});
    if (!pg.ok()) return pg.status();
    // The URL may carry a password: it is not logged.
    spdlog::info("store opened: PostgreSQL (schema v{}), node {}", (*pg)->schema_version(),
                 (*pg)->node_id());
    return std::unique_ptr<Store>(std::move(pg).value());
  }
  auto sqlite = SqliteStore::Open(
      {.path = (std::filesystem::path(options.data_dir) / "engram.db").string(),
       .intake_journal_dir = (std::filesystem::path(options.data_dir) / "intake").string()});
  if (!sqlite.ok()) return sqlite.status();
  spdlog::info("store opened: {} (schema v{})", options.data_dir, (*sqlite)->schema_version());
  return std::unique_ptr<Store>(std::move(sqlite).value());
}

// Every connection is a file descriptor, and so are the store's files: the soft limit (often
// 1,024) is raised to the hard one, and a limit below --max-connections is said at start.
void RaiseOpenFileLimit(uint64_t max_connections) {
  rlimit limit{};
  if (getrlimit(RLIMIT_NOFILE, &limit) != 0) return;
  if (limit.rlim_cur < limit.rlim_max) {
    limit.rlim_cur = limit.rlim_max;
    setrlimit(RLIMIT_NOFILE, &limit);
    getrlimit(RLIMIT_NOFILE, &limit);
  }
  constexpr uint64_t kSpare = 64;  // store files, journal, listeners, subprocess pipes
  if (limit.rlim_cur != RLIM_INFINITY && limit.rlim_cur < max_connections + kSpare) {
    spdlog::warn(
        "open file limit {} is below --max-connections {} plus {} for the server's own files; "
        "connections beyond it fail to be accepted (raise LimitNOFILE / ulimit -n)",
        static_cast<uint64_t>(limit.rlim_cur), max_connections, kSpare);
  }
}

int RunServe(ServeOptions options) {
  Status valid = options.Validate();
  if (!valid.ok()) {
    spdlog::error("{}", valid.message());
    return 2;
  }
  // The kernel family before anything runs a kernel: fixed for the process from here on.
  Result<KernelFamily> family = ParseKernelFamily(options.kernels);
  Status chosen = family.ok() ? ChooseKernelFamily(*family) : family.status();
  if (!chosen.ok()) {
    spdlog::error("--kernels {}: {}", options.kernels, chosen.message());
    return 2;
  }
  // Block the shutdown signals in every thread; main waits for them with sigwait below.
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGTERM);
  sigaddset(&signals, SIGINT);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);
  signal(SIGPIPE, SIG_IGN);
  RaiseOpenFileLimit(options.max_connections);

  std::error_code ec;
  std::filesystem::create_directories(options.data_dir, ec);
  if (ec) {
    spdlog::error("cannot create data directory {}: {}", options.data_dir, ec.message());
    return 1;
  }
  auto store = OpenStore(options);
  if (!store.ok()) {
    spdlog::error("cannot open store: {}", store.status().ToString());
    return 1;
  }

  auto auth = ApiKeyAuth::FromSpecs(options.api_keys);
  if (!auth.ok()) {
    spdlog::error("{}", auth.status().message());
    return 2;
  }
  if (auth->dev_mode()) {
    spdlog::warn("no API key configured: development mode, no authentication, loopback only");
  }

  std::unique_ptr<Embedder> model;
  // Counts the model's passes for /metrics; every user of the model goes through it.
  std::unique_ptr<MeteredEmbedder> metered;
  std::unique_ptr<Embedder> embedder;
  if (options.embedder == "builtin") {
    std::string dir = options.model_dir.empty() ? DefaultModelDir() : options.model_dir;
    UseLiteOptions model_options;
    const KernelFamilyTables tables = *TablesOfKernelFamily(*family);
    if (options.embed_precision == "auto") {
      // int8 products where they are measured (or, for AVX-VNNI, built) to beat float32 at the
      // same recall: AVX512_VNNI ~6x, AVX2 ~1.8x per short text. AVX2 int8 against AVX-512
      // float32 is not measured, and plain C++ int8 is slower than float32: float32 there. The
      // vectors' model id records which (see --embed-precision).
      const KernelIsa int8 = tables.int8->isa;
      const bool faster = int8 == KernelIsa::kAvx512Int8 || int8 == KernelIsa::kAvxVnniInt8 ||
                          (int8 == KernelIsa::kAvx2Int8 && *family == KernelFamily::kAvx2);
      model_options.kernels = faster ? tables.int8 : tables.fp32;
    } else if (options.embed_precision == "bf16") {
      model_options.kernels = tables.bf16;
      if (model_options.kernels == nullptr) {
        spdlog::error(
            "--embed-precision bf16 needs a CPU with AVX512_BF16 and the avx512 kernel family; "
            "this one runs {}",
            KernelFamilyName(*family));
        return 2;
      }
    } else if (options.embed_precision == "int8") {
      model_options.kernels = tables.int8;
    } else {
      model_options.kernels = tables.fp32;
    }
    spdlog::info("built-in model: {} products on the {} kernels (--embed-precision {})",
                 model_options.kernels->precision == KernelPrecision::kInt8   ? "int8"
                 : model_options.kernels->precision == KernelPrecision::kBf16 ? "bfloat16"
                                                                              : "float32",
                 KernelFamilyName(*family), options.embed_precision);
    auto loaded = UseLiteEmbedder::Load(dir, model_options);
    if (!loaded.ok()) {
      spdlog::error(
          "cannot load the built-in embedding model from {}: {} (run scripts/setup.sh, "
          "or pass --model-dir, or --embedder none for BM25 only)",
          dir, loaded.status().ToString());
      return 1;
    }
    model = std::move(*loaded);
    metered = std::make_unique<MeteredEmbedder>(model.get());
    // Concurrent callers (searches, event workers) share model passes, one pass per core at a
    // time.
    embedder = std::make_unique<BatchingEmbedder>(
        metered.get(), BatchingEmbedderOptions{
                           .max_leaders = static_cast<int>(std::thread::hardware_concurrency())});
  } else if (options.embedder == "openai") {
    auto remote = OpenAiEmbedder::Create(
        {.base_url = options.embed_url,
         .model = options.embed_model,
         .api_key = options.embed_api_key,
         .dimensions = options.embed_dimensions,
         .request_timeout = std::chrono::milliseconds(options.embed_timeout_ms),
         .max_retries = options.embed_retries});
    if (!remote.ok()) {
      spdlog::error("cannot use the embedding endpoint: {}", remote.status().ToString());
      return 1;
    }
    model = std::move(*remote);
    metered = std::make_unique<MeteredEmbedder>(model.get());
    // Requests to the endpoint wait on the network, not on a core: a few may be in flight.
    embedder = std::make_unique<BatchingEmbedder>(metered.get(),
                                                  BatchingEmbedderOptions{.max_leaders = 4});
  }
  // Search queries repeat, stored texts rarely do: the cache answers EmbedQuery only.
  std::unique_ptr<Embedder> batching = std::move(embedder);
  CachingEmbedder* query_cache = nullptr;
  if (batching) {
    auto cache = std::make_unique<CachingEmbedder>(
        batching.get(), QueryEmbeddingCacheOptions{
                            .max_entries = static_cast<size_t>(options.query_cache_entries)});
    query_cache = cache.get();
    embedder = std::move(cache);
  }
  if (embedder)
    spdlog::info("embedder: {} ({} dimensions)", embedder->model_id(), embedder->dimension());

  Analyzer analyzer;
  ShardOptions shard_options;
  shard_options.bm25 = {.k1 = static_cast<float>(options.bm25_k1),
                        .b = static_cast<float>(options.bm25_b)};
  if (embedder) {
    shard_options.vector_model = embedder->model_id();
    shard_options.vectors = {.dim = embedder->dimension(),
                             .hnsw_threshold = options.hnsw_threshold};
  }
  std::unique_ptr<VectorBackfill> backfill;
  // The background queue batches on its own (several adds per pass) and may hold the model for
  // seconds on a long text: it uses the (metered) model directly, not the batching lanes, so
  // query embeddings never queue behind it and its own workers keep running side by side.
  if (embedder) backfill = std::make_unique<VectorBackfill>((*store).get(), metered.get());
  // One memory budget over the shards of every domain: Leaderboard scopes, V4 memory workspaces,
  // knowledge bases and skill indexes. Declared before them all: it outlives every cache.
  ShardBudget shard_budget({.limit_bytes = options.shard_memory_mb << 20});
  ShardRegistry shards((*store).get(), &analyzer, shard_options, backfill.get(),
                       {.budget = &shard_budget});

  LeaderboardOptions lb_options;
  lb_options.workspace = options.leaderboard_workspace;
  ParseRetrievalMode(options.retrieval, &lb_options.retrieval.mode);
  lb_options.retrieval.fusion.method = options.fusion == "rrf"      ? FusionMethod::kRrf
                                       : options.fusion == "zscore" ? FusionMethod::kZScore
                                                                    : FusionMethod::kScoreSum;
  lb_options.retrieval.fusion.vector_weight = static_cast<float>(options.vector_weight);
  lb_options.retrieval.neighbours = options.neighbours;
  lb_options.retrieval.neighbour_score_factor = static_cast<float>(options.neighbour_weight);
  lb_options.retrieval.question_factor = static_cast<float>(options.question_factor);
  lb_options.retrieval.reply_score_factor = static_cast<float>(options.reply_weight);
  lb_options.retrieval.window_share = static_cast<float>(options.window_share);
  lb_options.retrieval.time_weight = static_cast<float>(options.time_weight);
  lb_options.retrieval.neighbour_placement = options.neighbour_placement == "scored"
                                                 ? RetrievalOptions::NeighbourPlacement::kByScore
                                                 : RetrievalOptions::NeighbourPlacement::kAfterHit;
  lb_options.rerank_candidates = static_cast<size_t>(options.rerank_candidates);
  LeaderboardService leaderboard((*store).get(), &shards, &analyzer, embedder.get(), backfill.get(),
                                 lb_options);
  std::unique_ptr<Reranker> reranker;
  if (options.rerank == "llm") {
    LlmRerankerOptions rr;
    rr.chat = LlmChatOptions(options);
    // A search waits for it: one bounded attempt, no retries; a short answer suffices.
    rr.chat.request_timeout = std::chrono::milliseconds(options.rerank_timeout_ms);
    rr.chat.connect_timeout =
        std::chrono::milliseconds(std::min<int64_t>(2000, options.rerank_timeout_ms));
    rr.chat.max_retries = 0;
    rr.chat.max_tokens = 1024;
    auto created = LlmReranker::Create(std::move(rr));
    if (!created.ok()) {
      spdlog::error("cannot use the LLM reranker: {}", created.status().ToString());
      return 2;
    }
    reranker = std::move(*created);
    leaderboard.SetReranker(reranker.get());
    spdlog::info("search reranking (leaderboard, memories): LLM, best {} results, {} ms budget",
                 options.rerank_candidates, options.rerank_timeout_ms);
  }
  // --- OCR: text in leaderboard images is indexed with the message ---
  std::unique_ptr<ImageTextExtractor> ocr;
  if (options.ocr) {
    auto created =
        ImageTextExtractor::Create({.timeout = std::chrono::milliseconds(options.ocr_timeout_ms)});
    if (created.ok()) {
      ocr = std::move(*created);
      leaderboard.SetImageText(ocr.get());
      spdlog::info("OCR: tesseract (eng), {} ms per image", options.ocr_timeout_ms);
    } else {
      spdlog::warn("OCR disabled: {}", created.status().ToString());
    }
  }
  // --- end OCR ---

  std::unique_ptr<MemoryExtractor> extractor;
  if (options.extractor == "llm") {
    LlmExtractorOptions llm;
    llm.chat = LlmChatOptions(options);
    auto created = LlmExtractor::Create(std::move(llm));
    if (!created.ok()) {
      spdlog::error("cannot use the LLM extractor: {}", created.status().ToString());
      return 2;
    }
    extractor = std::move(*created);
  } else {
    extractor = std::make_unique<RuleBasedExtractor>();
  }
  spdlog::info("memory extractor: {}", extractor->name());
  MemoryServiceOptions memory_options;
  memory_options.shard.bm25 = shard_options.bm25;
  memory_options.shard.vectors = shard_options.vectors;
  // One search: V4 memories are ranked with the Leaderboard's fusion and conversation steps.
  memory_options.shard.retrieval = lb_options.retrieval;
  memory_options.event_workers = options.event_workers;
  memory_options.job_poll_interval = std::chrono::milliseconds(options.job_poll_ms);
  memory_options.budget = &shard_budget;
  MemoryService memories((*store).get(), &analyzer, embedder.get(), extractor.get(),
                         memory_options);
  memories.SetReranker(reranker.get(), static_cast<size_t>(options.rerank_candidates));
  if (Status st = memories.Start(); !st.ok()) {
    spdlog::error("cannot resume memory events: {}", st.ToString());
    return 1;
  }

  // --- Knowledge bases ---
  DocFetcher doc_fetcher({.import_dir = options.import_dir,
                          .remote_fetch = options.remote_fetch,
                          .allow_private_addresses = options.remote_fetch_allow_private,
                          .max_bytes = options.kb_max_doc_bytes,
                          .oss = {.endpoint = options.oss_endpoint,
                                  .region = options.oss_region,
                                  .access_key = options.oss_access_key,
                                  .secret_key = options.oss_secret_key}});
  if (!options.import_dir.empty() && !std::filesystem::is_directory(options.import_dir, ec)) {
    spdlog::warn("--import-dir {} is not a directory: LOCAL documents will fail",
                 options.import_dir);
  }
  KbServiceOptions kb_options;
  kb_options.shard.bm25 = shard_options.bm25;
  kb_options.shard.vectors = shard_options.vectors;
  kb_options.shard.fusion = lb_options.retrieval.fusion;
  kb_options.chunks = {.max_chars = static_cast<size_t>(options.kb_chunk_size),
                       .overlap_chars = static_cast<size_t>(options.kb_chunk_overlap)};
  kb_options.documents.pdf_timeout = std::chrono::milliseconds(options.kb_pdf_timeout_ms);
  kb_options.workers = options.kb_workers;
  kb_options.job_poll_interval = std::chrono::milliseconds(options.job_poll_ms);
  kb_options.budget = &shard_budget;
  KbService knowledge((*store).get(), &analyzer, embedder.get(), &doc_fetcher, kb_options);
  if (Status st = knowledge.Start(); !st.ok()) {
    spdlog::error("cannot resume knowledge-base documents: {}", st.ToString());
    return 1;
  }
  // --- end Knowledge bases ---

  // --- Skills --- extracted with the LLM when memories are, else with the built-in extractor.
  std::unique_ptr<SkillExtractor> skill_extractor;
  if (options.extractor == "llm") {
    LlmSkillExtractorOptions llm;
    llm.chat = LlmChatOptions(options);
    auto created = LlmSkillExtractor::Create(std::move(llm));
    if (!created.ok()) {
      spdlog::error("cannot use the LLM skill extractor: {}", created.status().ToString());
      return 2;
    }
    skill_extractor = std::move(*created);
  } else {
    skill_extractor = std::make_unique<BuiltinSkillExtractor>();
  }
  SkillServiceOptions skill_options;
  skill_options.index.bm25 = memory_options.shard.bm25;
  skill_options.index.vectors = memory_options.shard.vectors;
  skill_options.index.fusion = lb_options.retrieval.fusion;
  skill_options.archive.max_files = options.skill_max_files;
  skill_options.archive.max_total_bytes = options.skill_max_bytes;
  skill_options.task_workers = options.skill_workers;
  skill_options.job_poll_interval = std::chrono::milliseconds(options.job_poll_ms);
  skill_options.budget = &shard_budget;
  SkillService skills((*store).get(), &analyzer, embedder.get(), skill_extractor.get(),
                      skill_options);
  if (Status st = skills.Start(); !st.ok()) {
    spdlog::error("cannot resume skill tasks: {}", st.ToString());
    return 1;
  }
  // --- end Skills ---

  Metrics metrics;
  Store* store_ptr = (*store).get();
  VectorBackfill* backfill_ptr = backfill.get();
  metrics.AddGaugeSource([&shards, &memories, &knowledge, &skills, &leaderboard, store_ptr,
                          backfill_ptr](std::string& out) {
    auto stats = store_ptr->GetStats();
    out +=
        "# HELP engram_shard_memories Memories held in loaded shards.\n# TYPE "
        "engram_shard_memories gauge\n";
    out += "engram_shard_memories " + std::to_string(shards.doc_count()) + "\n";
    out +=
        "# HELP engram_store_memories Memories in the store.\n# TYPE engram_store_memories gauge\n";
    out += "engram_store_memories " + std::to_string(stats.memories) + "\n";
    out +=
        "# HELP engram_store_bytes Size of the store on disk.\n# TYPE engram_store_bytes gauge\n";
    out += "engram_store_bytes " + std::to_string(stats.bytes_on_disk) + "\n";
    if (stats.group_commit) AppendWritePathMetrics(stats, out);
    out +=
        "# HELP engram_shard_loads_total Leaderboard shards loaded from the store.\n# TYPE "
        "engram_shard_loads_total counter\n";
    out += "engram_shard_loads_total " + std::to_string(shards.loads()) + "\n";
    out +=
        "# HELP engram_shard_load_seconds_total Time spent loading shards.\n# TYPE "
        "engram_shard_load_seconds_total counter\n";
    out += "engram_shard_load_seconds_total " + std::to_string(shards.load_micros() / 1e6) + "\n";
    out +=
        "# HELP engram_vector_queue Memories waiting for a vector.\n# TYPE engram_vector_queue "
        "gauge\n";
    out +=
        "engram_vector_queue " + std::to_string(backfill_ptr ? backfill_ptr->pending() : 0) + "\n";
    out +=
        "# HELP engram_memory_events_queued Memory events waiting for a worker.\n# TYPE "
        "engram_memory_events_queued gauge\n";
    out += "engram_memory_events_queued " + std::to_string(memories.queued_events()) + "\n";
    out +=
        "# HELP engram_agent_memories Agent memories held in loaded workspaces.\n# TYPE "
        "engram_agent_memories gauge\n";
    out += "engram_agent_memories " + std::to_string(memories.shard_memories()) + "\n";
    out +=
        "# HELP engram_kb_jobs_queued Knowledge-base documents waiting or being ingested.\n# TYPE "
        "engram_kb_jobs_queued gauge\n";
    out += "engram_kb_jobs_queued " + std::to_string(knowledge.queued_jobs()) + "\n";
    out +=
        "# HELP engram_skill_tasks_queued Skill extraction tasks waiting or running.\n# TYPE "
        "engram_skill_tasks_queued gauge\n";
    out += "engram_skill_tasks_queued " + std::to_string(skills.queued_tasks()) + "\n";
    out +=
        "# HELP engram_reranks_total Searches sent to the reranker.\n# TYPE engram_reranks_total "
        "counter\n";
    out += "engram_reranks_total{api=\"leaderboard\"} " +
           std::to_string(leaderboard.rerank().calls()) + "\n";
    out +=
        "engram_reranks_total{api=\"memory\"} " + std::to_string(memories.rerank().calls()) + "\n";
    out +=
        "# HELP engram_rerank_failures_total Reranks that failed (the search kept its own "
        "order).\n# TYPE engram_rerank_failures_total counter\n";
    out += "engram_rerank_failures_total{api=\"leaderboard\"} " +
           std::to_string(leaderboard.rerank().failures()) + "\n";
    out += "engram_rerank_failures_total{api=\"memory\"} " +
           std::to_string(memories.rerank().failures()) + "\n";
  });

  // The shard memory budget, per domain (leaderboard, memories, kb, skills).
  metrics.AddGaugeSource([&shard_budget](std::string& out) {
    const auto usage = shard_budget.Usage();
    auto per_domain = [&](std::string_view name, std::string_view type, std::string_view help,
                          auto value) {
      out += fmt::format("# HELP {} {}\n# TYPE {} {}\n", name, help, name, type);
      for (size_t d = 0; d < kShardDomainCount; ++d) {
        out += fmt::format("{}{{domain=\"{}\"}} {}\n", name,
                           ShardDomainName(static_cast<ShardDomain>(d)), value(usage[d]));
      }
    };
    per_domain("engram_shards_loaded", "gauge", "Shards held in memory, by domain.",
               [](const ShardDomainUsage& u) { return u.shards; });
    per_domain("engram_shard_bytes", "gauge",
               "Approximate memory held by loaded shards, by domain.",
               [](const ShardDomainUsage& u) { return u.bytes; });
    per_domain("engram_shard_evictions_total", "counter",
               "Idle shards dropped to stay within --shard-memory-mb, by domain.",
               [](const ShardDomainUsage& u) { return u.evictions; });
    AppendMetric(out, "gauge", "engram_shard_budget_bytes",
                 "The --shard-memory-mb budget over all domains' shards (0: no limit).",
                 shard_budget.limit_bytes());
  });

  // --- Leaderboard data lifecycle: retention and idempotency expiry (docs/leaderboard.md) ---
  constexpr double kMicrosPerDay = 86400.0 * 1e6;
  LeaderboardJanitor janitor(
      &leaderboard, {.retention = std::chrono::microseconds(
                         static_cast<int64_t>(options.leaderboard_retention_days * kMicrosPerDay)),
                     .idempotency_ttl = std::chrono::microseconds(static_cast<int64_t>(
                         options.leaderboard_idempotency_ttl_days * kMicrosPerDay))});
  janitor.Start();
  if (options.leaderboard_retention_days > 0) {
    spdlog::info("leaderboard retention: users idle for {} days are deleted (sweep every {} ms)",
                 options.leaderboard_retention_days, janitor.interval().count());
  }
  if (query_cache != nullptr) {
    metrics.AddGaugeSource([query_cache](std::string& out) {
      AppendMetric(out, "counter", "engram_query_embedding_cache_hits_total",
                   "Search queries whose vector came from the query embedding cache.",
                   query_cache->hits());
      AppendMetric(out, "counter", "engram_query_embedding_cache_misses_total",
                   "Search queries embedded by the model (not in the query embedding cache).",
                   query_cache->misses());
      AppendMetric(out, "gauge", "engram_query_embedding_cache_entries",
                   "Query vectors held in the query embedding cache.", query_cache->size());
    });
  }
  if (metered != nullptr) {
    metrics.AddGaugeSource([m = metered.get()](std::string& out) {
      const EmbedLaneUsage request = m->usage(EmbedLane::kRequest);
      const EmbedLaneUsage background = m->usage(EmbedLane::kBackground);
      auto lanes = [](double r, double b) {
        return std::vector<std::pair<std::string_view, double>>{{"request", r}, {"background", b}};
      };
      AppendLabelledMetric(out, "counter", "engram_embed_seconds_total",
                           "Wall seconds spent inside the embedding model, by lane.", "lane",
                           lanes(request.nanos / 1e9, background.nanos / 1e9));
      AppendLabelledMetric(
          out, "counter", "engram_embed_texts_total", "Texts embedded by the model, by lane.",
          "lane", lanes(static_cast<double>(request.texts), static_cast<double>(background.texts)));
      AppendLabelledMetric(
          out, "counter", "engram_embed_batches_total", "Model passes (batches of texts), by lane.",
          "lane",
          lanes(static_cast<double>(request.batches), static_cast<double>(background.batches)));
    });
  }
  metrics.AddGaugeSource([&janitor](std::string& out) {
    AppendMetric(out, "counter", "engram_leaderboard_purged_users_total",
                 "Leaderboard users deleted by the retention sweep.", janitor.purged_users());
    AppendMetric(out, "counter", "engram_leaderboard_purged_messages_total",
                 "Messages deleted by the retention sweep.", janitor.purged_messages());
    AppendMetric(out, "counter", "engram_leaderboard_purged_images_total",
                 "Images deleted by the retention sweep.", janitor.purged_images());
    AppendMetric(out, "counter", "engram_leaderboard_idempotency_expired_total",
                 "Idempotency records deleted after their TTL.", janitor.expired_idempotency());
    AppendMetric(out, "counter", "engram_leaderboard_sweep_failures_total",
                 "Retention or expiry sweeps that failed (retried at the next sweep).",
                 janitor.sweep_failures());
  });

  Router router;
  RegisterOpsRoutes(router, store_ptr, &metrics);
  LeaderboardApiLimits leaderboard_limits;
  leaderboard_limits.content.max_image_bytes = options.max_image_bytes;
  leaderboard_limits.content.max_total_image_bytes = options.max_request_image_bytes;
  RegisterLeaderboardRoutes(router, &leaderboard, leaderboard_limits,
                            LeaderboardServerInfo{.version = std::string(GetBuildInfo().version)});
  MemoryApiLimits memory_limits;
  memory_limits.max_top_k = options.max_top_k;
  memory_limits.max_metadata_bytes = options.max_metadata_bytes;
  RegisterMemoryRoutes(router, &memories, memory_limits);
  // mem0's Platform API over the same memories (docs/mem0.md).
  if (!IsValidWorkspaceName(options.mem0_workspace)) {
    spdlog::error("--mem0-workspace must be 1-64 letters, digits, '-', '_' or '.'");
    return 1;
  }
  RegisterMem0Routes(
      router, Mem0ApiDeps{.memories = &memories, .auth = &*auth, .extractor = extractor.get()},
      Mem0ApiOptions{.default_workspace = options.mem0_workspace, .limits = memory_limits});
  KbApiLimits kb_limits;
  kb_limits.max_top_k = options.max_top_k;
  RegisterKbRoutes(router, &knowledge, kb_limits);  // knowledge bases
  RegisterSkillRoutes(router, &skills, SkillApiLimits{.max_zip_bytes = options.skill_max_bytes});
  // MCP (Model Context Protocol) at /mcp over the same services and limits (docs/mcp.md).
  mcp::McpServiceOptions mcp_options{.version = std::string(GetBuildInfo().version)};
  mcp_options.memory.limits = memory_limits;
  mcp_options.knowledge = kb_limits;
  mcp_options.skills.limits.max_zip_bytes = options.skill_max_bytes;
  mcp_options.http.dev_mode = auth->dev_mode();
  mcp_options.http.max_message_bytes = options.max_body_bytes;
  mcp::McpService mcp_server(&memories, &knowledge, &skills, std::move(mcp_options));
  mcp_server.RegisterRoutes(router);
  // The served /openapi.json must describe exactly these routes (see openapi_check.h).
  if (auto problems = CompareRoutesWithOpenApi(router, OpenApiDocument()); !problems.empty()) {
    for (const auto& p : problems) spdlog::error("route table and openapi.json disagree: {}", p);
    return 1;
  }
  App app(std::move(router), &*auth, &metrics);

  HttpServerOptions http;
  http.host = options.host;
  http.port = options.port;
  http.io_threads = options.io_threads > 0
                        ? options.io_threads
                        : std::max(2, static_cast<int>(std::thread::hardware_concurrency()));
  http.worker_threads = options.worker_threads;
  // Searches wait on nothing but the cores when the store, the embedding model and the ranking
  // are local: they run on the I/O threads, one per core at a time. A PostgreSQL store (each
  // search checks the scope's version), an embedding endpoint or an LLM reranker makes them wait
  // on the network, where so few at once would idle the cores; they then go to the worker pool.
  if (options.store_url.empty() && options.embedder != "openai" && options.rerank != "llm") {
    http.compute_slots = options.compute_slots;
    http.is_compute_bound = [&app](const HttpRequest& r) { return app.IsComputeBound(r); };
  }
  // With SQLite an add only appends its event to the intake journal and is answered once that is
  // synced: the I/O thread that read it runs it. PostgreSQL's insert waits on the network.
  if (options.store_url.empty()) {
    http.runs_inline = [&app](const HttpRequest& r) { return app.RunsInline(r); };
  }
  http.max_body_bytes = options.max_body_bytes;
  http.max_header_bytes = options.max_header_bytes;
  http.header_timeout = std::chrono::milliseconds(options.header_timeout_ms);
  http.body_timeout = std::chrono::milliseconds(options.body_timeout_ms);
  http.idle_timeout = std::chrono::milliseconds(options.idle_timeout_ms);
  http.max_connections = options.max_connections;
  http.max_connections_per_client = options.max_connections_per_client;
  http.idle_timeout_under_pressure = std::chrono::milliseconds(options.pressure_idle_timeout_ms);
  http.max_inflight_body_bytes = options.max_inflight_body_bytes;
  http.check_head = [&app](const HttpRequest& head) { return app.CheckBeforeBody(head); };
  HttpServer server(
      http, [&app](const HttpRequest& r) { return app.Handle(r); },
      [&app](StatusCode code, const std::string& msg) {
        return app.RenderTransportError(code, msg);
      });
  // Before Start: no request renders metrics yet.
  metrics.AddGaugeSource(
      [&server](std::string& out) { AppendTransportMetrics(server.stats(), out); });
  metrics.AddGaugeSource([](std::string& out) {
    const BuildInfo info = GetBuildInfo();
    fmt::format_to(std::back_inserter(out),
                   "# HELP engram_build_info The running binary's version and source revision.\n"
                   "# TYPE engram_build_info gauge\n"
                   "engram_build_info{{version=\"{}\",revision=\"{}\"}} 1\n",
                   info.version, info.revision);
  });
  Status started = server.Start();
  if (!started.ok()) {
    spdlog::error("cannot listen on {}: {}", options.listen, started.message());
    return 1;
  }
  std::string where =
      (options.host.find(':') != std::string::npos ? "[" + options.host + "]" : options.host) +
      ":" + std::to_string(server.port());
  // Tooling waits for this exact line on stdout.
  std::cout << "engram listening on " << where << std::endl;
  spdlog::info("listening on {}", where);

  int sig = 0;
  sigwait(&signals, &sig);
  spdlog::info("signal {} received: shutting down", sig);
  server.Stop(std::chrono::milliseconds(options.shutdown_grace_ms));
  // Events still queued stay PENDING in the store and run at the next start.
  memories.Shutdown();
  skills.Shutdown();     // skill tasks still queued stay pending and resume at the next start
  knowledge.Shutdown();  // documents still queued stay PROCESSING and resume at the next start
  // Vectors still being computed are dropped (the backfill redoes them at the next start) rather
  // than holding up shutdown behind a long text in the model.
  bool workers_done = !backfill || backfill->Shutdown(std::chrono::milliseconds(1000));
  shards.StopListening();  // the store goes first: nothing may call into it afterwards
  store->reset();          // SQLite: drains the writer and checkpoints the WAL
  spdlog::info("shutdown complete");
  if (!workers_done) {
    // A worker is still inside the model; it will never touch the (closed) store. Exit without
    // waiting for it.
    spdlog::default_logger()->flush();
    std::cout.flush();
    std::_Exit(0);
  }
  backfill.reset();
  return 0;
}

}  // namespace engram
