#include "modules/leaderboard_module.h"

#include <spdlog/spdlog.h>

#include "api/leaderboard_api.h"
#include "api/metrics.h"
#include "api/router.h"
#include "common/build_info.h"
#include "core/leaderboard_janitor.h"
#include "core/shard_registry.h"
#include "extract/ocr/image_text.h"
#include "modules/retrieval_module.h"
#include "store/message_store.h"

namespace engram {

namespace {

constexpr double kMicrosPerDay = 86400.0 * 1e6;

std::chrono::microseconds Days(double days) {
  return std::chrono::microseconds(static_cast<int64_t>(days * kMicrosPerDay));
}

}  // namespace

LeaderboardModule::~LeaderboardModule() = default;

Result<std::unique_ptr<LeaderboardModule>> LeaderboardModule::Build(const ServeOptions& options,
                                                                    LeaderboardModuleDeps deps) {
  std::unique_ptr<LeaderboardModule> m(new LeaderboardModule());
  m->retention_days_ = options.leaderboard_retention_days;
  m->max_image_bytes_ = options.max_image_bytes;
  m->max_request_image_bytes_ = options.max_request_image_bytes;
  RetrievalModule& retrieval = *deps.retrieval;
  m->shards_ = std::make_unique<ShardRegistry>(
      deps.store, retrieval.analyzer(), retrieval.index(), retrieval.backfill(),
      ShardRegistryOptions{.budget = retrieval.budget(), .graph_dir = retrieval.graph_dir()});
  LeaderboardOptions lb;
  lb.workspace = options.leaderboard_workspace;
  lb.retrieval = retrieval.retrieval();
  lb.retrieval.excerpts = options.leaderboard_results == "excerpts";
  lb.retrieval.excerpt = {.turns_before = static_cast<size_t>(options.excerpt_turns_before),
                          .turns_after = static_cast<size_t>(options.excerpt_turns_after),
                          .max_result_bytes = options.excerpt_max_bytes,
                          .answer_max_bytes = options.answer_max_bytes,
                          .lead_results = static_cast<size_t>(options.excerpt_lead_results)};
  lb.rerank_candidates = retrieval.rerank_candidates();
  m->service_ = std::make_unique<LeaderboardService>(
      deps.store, m->shards_.get(), retrieval.analyzer(), deps.embedder, retrieval.backfill(), lb);
  if (retrieval.reranker() != nullptr) m->service_->SetReranker(retrieval.reranker());
  // Text in images is indexed with the message, so a search finds what a screenshot says.
  if (options.ocr) {
    auto created =
        ImageTextExtractor::Create({.timeout = std::chrono::milliseconds(options.ocr_timeout_ms)});
    if (created.ok()) {
      m->ocr_ = std::move(*created);
      m->service_->SetImageText(m->ocr_.get());
      spdlog::info("OCR: tesseract (eng), {} ms per image", options.ocr_timeout_ms);
    } else {
      spdlog::warn("OCR disabled: {}", created.status().ToString());
    }
  }
  m->janitor_ = std::make_unique<LeaderboardJanitor>(
      m->service_.get(),
      LeaderboardJanitorOptions{.retention = Days(options.leaderboard_retention_days),
                                .idempotency_ttl = Days(options.leaderboard_idempotency_ttl_days)});
  return m;
}

void LeaderboardModule::Start() {
  janitor_->Start();
  if (retention_days_ > 0) {
    spdlog::info("leaderboard retention: users idle for {} days are deleted (sweep every {} ms)",
                 retention_days_, janitor_->interval().count());
  }
}

void LeaderboardModule::RegisterRoutes(Router& router) const {
  LeaderboardApiLimits limits;
  limits.content.max_image_bytes = max_image_bytes_;
  limits.content.max_total_image_bytes = max_request_image_bytes_;
  RegisterLeaderboardRoutes(router, service_.get(), limits,
                            LeaderboardServerInfo{.version = std::string(GetBuildInfo().version)});
}

void LeaderboardModule::Shutdown() {
  janitor_->Stop();
  shards_->StopListening();
  shards_->SaveGraphs();  // the next start's loads take them back
}

LeaderboardModule::Stats LeaderboardModule::stats() const {
  Stats s;
  s.shard_memories = shards_->doc_count();
  s.shard_loads = static_cast<uint64_t>(shards_->loads());
  s.shard_load_seconds = static_cast<double>(shards_->load_micros()) / 1e6;
  s.purged_users = static_cast<uint64_t>(janitor_->purged_users());
  s.purged_messages = static_cast<uint64_t>(janitor_->purged_messages());
  s.purged_images = static_cast<uint64_t>(janitor_->purged_images());
  s.idempotency_expired = static_cast<uint64_t>(janitor_->expired_idempotency());
  s.sweep_failures = static_cast<uint64_t>(janitor_->sweep_failures());
  return s;
}

void LeaderboardModule::AppendMetrics(std::string& out) const {
  const Stats s = stats();
  AppendMetric(out, "gauge", "engram_shard_memories", "Memories held in loaded shards.",
               s.shard_memories);
  AppendMetric(out, "counter", "engram_shard_loads_total",
               "Leaderboard shards loaded from the store.", s.shard_loads);
  out +=
      "# HELP engram_shard_load_seconds_total Time spent loading shards.\n# TYPE "
      "engram_shard_load_seconds_total counter\n";
  out += "engram_shard_load_seconds_total " + std::to_string(s.shard_load_seconds) + "\n";
  AppendMetric(out, "counter", "engram_leaderboard_purged_users_total",
               "Leaderboard users deleted by the retention sweep.", s.purged_users);
  AppendMetric(out, "counter", "engram_leaderboard_purged_messages_total",
               "Messages deleted by the retention sweep.", s.purged_messages);
  AppendMetric(out, "counter", "engram_leaderboard_purged_images_total",
               "Images deleted by the retention sweep.", s.purged_images);
  AppendMetric(out, "counter", "engram_leaderboard_idempotency_expired_total",
               "Idempotency records deleted after their TTL.", s.idempotency_expired);
  AppendMetric(out, "counter", "engram_leaderboard_sweep_failures_total",
               "Retention or expiry sweeps that failed (retried at the next sweep).",
               s.sweep_failures);
}

}  // namespace engram
