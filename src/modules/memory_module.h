// The memories module: the V4 Agentic Memory API and the mem0-compatible REST API over the same
// memories. The memory extractor (rule-based, or an LLM behind --llm-*), the service with its
// event workers and workspace shards (under the shared budget), and both APIs' routes.
//
// Ownership: owns what it builds; the store, the retrieval module and the authenticator must
// outlive it. Thread-safety: the service and the stats are safe for concurrent use; Build, Start,
// RegisterRoutes and Shutdown run on the thread that composes the server.
#pragma once

#include <memory>
#include <string>

#include "api/memory_api.h"
#include "config/serve_options.h"
#include "core/memory_service.h"

namespace engram {

class ApiKeyAuth;
class Embedder;
class MemoryExtractor;
class RetrievalModule;
class Router;
class AgentMemoryStore;

struct MemoryModuleDeps {
  AgentMemoryStore* store = nullptr;
  RetrievalModule* retrieval = nullptr;
  const Embedder* embedder = nullptr;  // null: BM25 only
  const ApiKeyAuth* auth = nullptr;    // the mem0 API resolves workspaces from the key
};

class MemoryModule {
 public:
  static Result<std::unique_ptr<MemoryModule>> Build(const ServeOptions& options,
                                                     MemoryModuleDeps deps);
  ~MemoryModule();

  MemoryService* service() { return service_.get(); }
  const MemoryApiLimits& limits() const { return limits_; }

  // Resumes the events a previous run left unfinished and starts the workers.
  Status Start();
  // Both APIs: V4 under /v3/openapi/workspaces/…/memories, mem0 under /v1 and /v2.
  void RegisterRoutes(Router& router) const;
  // Stops taking events; queued ones stay PENDING in the store and run at the next start.
  void Shutdown();

  struct Stats {
    uint64_t queued_events = 0;   // waiting for a worker
    uint64_t shard_memories = 0;  // held in loaded workspaces
  };
  Stats stats() const;
  void AppendMetrics(std::string& out) const;

 private:
  MemoryModule() = default;

  MemoryApiLimits limits_;
  std::string mem0_workspace_;
  const ApiKeyAuth* auth_ = nullptr;
  std::unique_ptr<MemoryExtractor> extractor_;
  std::unique_ptr<MemoryService> service_;
};

}  // namespace engram
