#include "modules/skills_module.h"

#include "api/metrics.h"
#include "api/router.h"
#include "extract/skill_extractor.h"
#include "extract/skill_llm_extractor.h"
#include "modules/llm_endpoint.h"
#include "modules/retrieval_module.h"
#include "modules/startup.h"
#include "store/skill_store.h"

namespace engram {

namespace {

// Extracted with the LLM when memories are, else with the built-in extractor.
Result<std::unique_ptr<SkillExtractor>> SkillExtractorFromFlags(const ServeOptions& options) {
  if (options.extractor != "llm") {
    return std::unique_ptr<SkillExtractor>(new BuiltinSkillExtractor());
  }
  LlmSkillExtractorOptions llm;
  llm.chat = LlmChatOptions(options);
  auto created = LlmSkillExtractor::Create(std::move(llm));
  if (!created.ok()) {
    return ConfigurationError("cannot use the LLM skill extractor: " + created.status().ToString());
  }
  return std::unique_ptr<SkillExtractor>(std::move(*created));
}

}  // namespace

SkillsModule::~SkillsModule() = default;

Result<std::unique_ptr<SkillsModule>> SkillsModule::Build(const ServeOptions& options,
                                                          SkillsModuleDeps deps) {
  std::unique_ptr<SkillsModule> m(new SkillsModule());
  m->limits_.max_zip_bytes = options.skill_max_bytes;
  auto extractor = SkillExtractorFromFlags(options);
  if (!extractor.ok()) return extractor.status();
  m->extractor_ = std::move(*extractor);
  RetrievalModule& retrieval = *deps.retrieval;
  SkillServiceOptions service;
  service.index.bm25 = retrieval.index().bm25;
  service.index.vectors = retrieval.index().vectors;
  service.index.fusion = retrieval.retrieval().fusion;
  service.archive.max_files = options.skill_max_files;
  service.archive.max_total_bytes = options.skill_max_bytes;
  service.task_workers = options.skill_workers;
  service.job_poll_interval = std::chrono::milliseconds(options.job_poll_ms);
  service.budget = retrieval.budget();
  m->service_ = std::make_unique<SkillService>(deps.store, retrieval.analyzer(), deps.embedder,
                                               m->extractor_.get(), service);
  return m;
}

Status SkillsModule::Start() {
  Status started = service_->Start();
  if (!started.ok()) return StartFailure("cannot resume skill tasks: " + started.ToString());
  return Status::Ok();
}

void SkillsModule::RegisterRoutes(Router& router) const {
  RegisterSkillRoutes(router, service_.get(), limits_);
}

void SkillsModule::Shutdown() { service_->Shutdown(); }

SkillsModule::Stats SkillsModule::stats() const {
  return {.queued_tasks = service_->queued_tasks()};
}

void SkillsModule::AppendMetrics(std::string& out) const {
  AppendMetric(out, "gauge", "engram_skill_tasks_queued",
               "Skill extraction tasks waiting or running.", stats().queued_tasks);
}

}  // namespace engram
