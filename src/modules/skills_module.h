// The skills module: the V3 skills API. The skill extractor (the LLM behind --llm-* when memories
// use it, else the built-in one), the service with its task workers and per-workspace indexes
// (under the shared budget), the ZIP import limits and the routes.
//
// Ownership: owns what it builds; the store and the retrieval module must outlive it.
// Thread-safety: the service and the stats are safe for concurrent use; Build, Start,
// RegisterRoutes and Shutdown run on the thread that composes the server.
#pragma once

#include <memory>
#include <string>

#include "api/skills_api.h"
#include "config/serve_options.h"
#include "core/skill_service.h"

namespace engram {

class Embedder;
class RetrievalModule;
class Router;
class SkillExtractor;
class SkillStore;

struct SkillsModuleDeps {
  SkillStore* store = nullptr;
  RetrievalModule* retrieval = nullptr;
  const Embedder* embedder = nullptr;  // null: BM25 only
};

class SkillsModule {
 public:
  static Result<std::unique_ptr<SkillsModule>> Build(const ServeOptions& options,
                                                     SkillsModuleDeps deps);
  ~SkillsModule();

  SkillService* service() { return service_.get(); }
  const SkillApiLimits& limits() const { return limits_; }

  // Resumes tasks a previous run left pending and starts the workers.
  Status Start();
  void RegisterRoutes(Router& router) const;
  // Tasks still queued stay pending and resume at the next start.
  void Shutdown();

  struct Stats {
    uint64_t queued_tasks = 0;  // extraction tasks waiting or running
  };
  Stats stats() const;
  void AppendMetrics(std::string& out) const;

 private:
  SkillsModule() = default;

  SkillApiLimits limits_;
  std::unique_ptr<SkillExtractor> extractor_;
  std::unique_ptr<SkillService> service_;
};

}  // namespace engram
