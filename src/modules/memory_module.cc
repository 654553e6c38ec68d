#include "modules/memory_module.h"

#include <spdlog/spdlog.h>

#include "api/auth.h"
#include "api/mem0/mem0_api.h"
#include "api/metrics.h"
#include "api/router.h"
#include "extract/llm_extractor.h"
#include "extract/rule_based_extractor.h"
#include "modules/llm_endpoint.h"
#include "modules/retrieval_module.h"
#include "modules/startup.h"
#include "store/agent_memory_store.h"

namespace engram {

namespace {

Result<std::unique_ptr<MemoryExtractor>> ExtractorFromFlags(const ServeOptions& options) {
  if (options.extractor != "llm") return std::unique_ptr<MemoryExtractor>(new RuleBasedExtractor());
  LlmExtractorOptions llm;
  llm.chat = LlmChatOptions(options);
  auto created = LlmExtractor::Create(std::move(llm));
  if (!created.ok()) {
    return ConfigurationError("cannot use the LLM extractor: " + created.status().ToString());
  }
  return std::unique_ptr<MemoryExtractor>(std::move(*created));
}

}  // namespace

MemoryModule::~MemoryModule() = default;

Result<std::unique_ptr<MemoryModule>> MemoryModule::Build(const ServeOptions& options,
                                                          MemoryModuleDeps deps) {
  // mem0's Platform API over the same memories (docs/mem0.md): requests naming no project land in
  // this workspace.
  if (!IsValidWorkspaceName(options.mem0_workspace)) {
    return ConfigurationError("--mem0-workspace must be 1-64 letters, digits, '-', '_' or '.'");
  }
  std::unique_ptr<MemoryModule> m(new MemoryModule());
  m->mem0_workspace_ = options.mem0_workspace;
  m->auth_ = deps.auth;
  m->limits_.max_top_k = options.max_top_k;
  m->limits_.max_metadata_bytes = options.max_metadata_bytes;
  auto extractor = ExtractorFromFlags(options);
  if (!extractor.ok()) return extractor.status();
  m->extractor_ = std::move(*extractor);
  spdlog::info("memory extractor: {}", m->extractor_->name());

  RetrievalModule& retrieval = *deps.retrieval;
  MemoryServiceOptions service;
  service.shard.bm25 = retrieval.index().bm25;
  service.shard.vectors = retrieval.index().vectors;
  // One search: V4 memories are ranked with the Leaderboard's fusion and conversation steps.
  service.shard.retrieval = retrieval.retrieval();
  service.event_workers = options.event_workers;
  service.job_poll_interval = std::chrono::milliseconds(options.job_poll_ms);
  service.budget = retrieval.budget();
  service.graph_dir = retrieval.graph_dir();
  m->service_ = std::make_unique<MemoryService>(deps.store, retrieval.analyzer(), deps.embedder,
                                                m->extractor_.get(), service);
  m->service_->SetReranker(retrieval.reranker(), retrieval.rerank_candidates());
  return m;
}

Status MemoryModule::Start() {
  Status started = service_->Start();
  if (!started.ok()) return StartFailure("cannot resume memory events: " + started.ToString());
  return Status::Ok();
}

void MemoryModule::RegisterRoutes(Router& router) const {
  RegisterMemoryRoutes(router, service_.get(), limits_);
  RegisterMem0Routes(
      router, Mem0ApiDeps{.memories = service_.get(), .auth = auth_, .extractor = extractor_.get()},
      Mem0ApiOptions{.default_workspace = mem0_workspace_, .limits = limits_});
}

void MemoryModule::Shutdown() {
  service_->Shutdown();
  service_->SaveGraphs();  // the next start's loads take them back
}

MemoryModule::Stats MemoryModule::stats() const {
  return {.queued_events = service_->queued_events(), .shard_memories = service_->shard_memories()};
}

void MemoryModule::AppendMetrics(std::string& out) const {
  const Stats s = stats();
  AppendMetric(out, "gauge", "engram_memory_events_queued", "Memory events waiting for a worker.",
               s.queued_events);
  AppendMetric(out, "gauge", "engram_agent_memories", "Agent memories held in loaded workspaces.",
               s.shard_memories);
}

}  // namespace engram
