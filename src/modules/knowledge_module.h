// The knowledge-base module: documents fetched from a local import directory, http(s) or an
// S3-compatible store, parsed, chunked and indexed (one shard per knowledge base, under the shared
// budget), searched; the ingestion workers and the routes.
//
// Ownership: owns what it builds; the store and the retrieval module must outlive it.
// Thread-safety: the service and the stats are safe for concurrent use; Build, Start,
// RegisterRoutes and Shutdown run on the thread that composes the server.
#pragma once

#include <memory>
#include <string>

#include "api/kb_api.h"
#include "config/serve_options.h"
#include "core/kb_service.h"

namespace engram {

class DocFetcher;
class Embedder;
class RetrievalModule;
class Router;
class KbStore;

struct KnowledgeModuleDeps {
  KbStore* store = nullptr;
  RetrievalModule* retrieval = nullptr;
  const Embedder* embedder = nullptr;  // null: BM25 only
};

class KnowledgeModule {
 public:
  static Result<std::unique_ptr<KnowledgeModule>> Build(const ServeOptions& options,
                                                        KnowledgeModuleDeps deps);
  ~KnowledgeModule();

  KbService* service() { return service_.get(); }
  const KbApiLimits& limits() const { return limits_; }

  // Resumes documents a previous run left PROCESSING and starts the workers.
  Status Start();
  void RegisterRoutes(Router& router) const;
  // Documents still queued stay PROCESSING and resume at the next start.
  void Shutdown();

  struct Stats {
    uint64_t queued_jobs = 0;  // documents waiting or being ingested
  };
  Stats stats() const;
  void AppendMetrics(std::string& out) const;

 private:
  KnowledgeModule() = default;

  KbApiLimits limits_;
  std::unique_ptr<DocFetcher> fetcher_;
  std::unique_ptr<KbService> service_;
};

}  // namespace engram
