#include "modules/knowledge_module.h"

#include <spdlog/spdlog.h>

#include <filesystem>

#include "api/auth.h"
#include "api/metrics.h"
#include "api/router.h"
#include "extract/documents/doc_fetcher.h"
#include "modules/retrieval_module.h"
#include "modules/startup.h"
#include "store/kb_store.h"

namespace engram {

KnowledgeModule::~KnowledgeModule() = default;

Result<std::unique_ptr<KnowledgeModule>> KnowledgeModule::Build(const ServeOptions& options,
                                                                KnowledgeModuleDeps deps) {
  std::unique_ptr<KnowledgeModule> m(new KnowledgeModule());
  m->limits_.max_top_k = options.max_top_k;
  m->limits_.max_upload_bytes = options.kb_max_doc_bytes;
  bool per_workspace = options.import_dir_layout == "per-workspace";
  if (options.import_dir_layout == "auto") {
    auto auth = ApiKeyAuth::FromSpecs(options.api_keys);
    per_workspace = auth.ok() && auth->limits_workspaces();
  }
  m->fetcher_ = std::make_unique<DocFetcher>(
      DocFetcherOptions{.import_dir = options.import_dir,
                        .import_per_workspace = per_workspace,
                        .remote_fetch = options.remote_fetch,
                        .allow_private_addresses = options.remote_fetch_allow_private,
                        .max_bytes = options.kb_max_doc_bytes,
                        .oss = {.endpoint = options.oss_endpoint,
                                .region = options.oss_region,
                                .access_key = options.oss_access_key,
                                .secret_key = options.oss_secret_key}});
  std::error_code ec;
  if (!options.import_dir.empty() && !std::filesystem::is_directory(options.import_dir, ec)) {
    spdlog::warn("--import-dir {} is not a directory: LOCAL documents will fail",
                 options.import_dir);
  } else if (!options.import_dir.empty()) {
    spdlog::info("LOCAL documents: {}", per_workspace
                                            ? "each workspace reads --import-dir/<workspace>"
                                            : "every workspace reads --import-dir");
  }
  RetrievalModule& retrieval = *deps.retrieval;
  KbServiceOptions service;
  service.shard.bm25 = retrieval.index().bm25;
  service.shard.vectors = retrieval.index().vectors;
  service.shard.fusion = retrieval.retrieval().fusion;
  service.chunks = {.max_chars = static_cast<size_t>(options.kb_chunk_size),
                    .overlap_chars = static_cast<size_t>(options.kb_chunk_overlap)};
  service.documents.pdf_timeout = std::chrono::milliseconds(options.kb_pdf_timeout_ms);
  service.workers = options.kb_workers;
  service.job_poll_interval = std::chrono::milliseconds(options.job_poll_ms);
  service.budget = retrieval.budget();
  service.graph_dir = retrieval.graph_dir();
  m->service_ = std::make_unique<KbService>(deps.store, retrieval.analyzer(), deps.embedder,
                                            m->fetcher_.get(), service);
  return m;
}

Status KnowledgeModule::Start() {
  Status started = service_->Start();
  if (!started.ok()) {
    return StartFailure("cannot resume knowledge-base documents: " + started.ToString());
  }
  return Status::Ok();
}

void KnowledgeModule::RegisterRoutes(Router& router) const {
  RegisterKbRoutes(router, service_.get(), limits_);
}

void KnowledgeModule::Shutdown() {
  service_->Shutdown();
  service_->SaveGraphs();  // the next start's loads take them back
}

KnowledgeModule::Stats KnowledgeModule::stats() const {
  return {.queued_jobs = service_->queued_jobs()};
}

void KnowledgeModule::AppendMetrics(std::string& out) const {
  AppendMetric(out, "gauge", "engram_kb_jobs_queued",
               "Knowledge-base documents waiting or being ingested.", stats().queued_jobs);
}

}  // namespace engram
