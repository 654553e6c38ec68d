#include "modules/server_modules.h"

#include "api/ops_api.h"
#include "api/workspaces_api.h"
#include "console/routes.h"
#include "modules/mcp_module.h"
#include "modules/store_module.h"

namespace engram {

namespace {

// Keeps a built module in `target`, or passes its error on.
template <class T>
Status Keep(Result<std::unique_ptr<T>> built, std::unique_ptr<T>& target) {
  if (!built.ok()) return built.status();
  target = std::move(built).value();
  return Status::Ok();
}

}  // namespace

Status BuildModules(const ServeOptions& options, KernelFamily family, const ApiKeyAuth& auth,
                    Modules& m) {
  ENGRAM_RETURN_IF_ERROR(Keep(OpenStore(options), m.store));
  ENGRAM_RETURN_IF_ERROR(Keep(EmbeddingModule::Build(options, family), m.embedding));
  const Embedder* embedder = m.embedding->search();
  ENGRAM_RETURN_IF_ERROR(
      Keep(RetrievalModule::Build(options, {.vectors = m.store.get(),
                                            .search_embedder = embedder,
                                            .background_embedder = m.embedding->background(),
                                            .scopes = m.store.get()}),
           m.retrieval));
  Store* store = m.store.get();
  RetrievalModule* retrieval = m.retrieval.get();
  ENGRAM_RETURN_IF_ERROR(
      Keep(LeaderboardModule::Build(options,
                                    {.store = store, .retrieval = retrieval, .embedder = embedder}),
           m.leaderboard));
  ENGRAM_RETURN_IF_ERROR(Keep(
      MemoryModule::Build(
          options, {.store = store, .retrieval = retrieval, .embedder = embedder, .auth = &auth}),
      m.memories));
  ENGRAM_RETURN_IF_ERROR(
      Keep(KnowledgeModule::Build(options,
                                  {.store = store, .retrieval = retrieval, .embedder = embedder}),
           m.knowledge));
  ENGRAM_RETURN_IF_ERROR(Keep(
      SkillsModule::Build(options, {.store = store, .retrieval = retrieval, .embedder = embedder}),
      m.skills));
  m.mcp = BuildMcpService(
      options,
      {.memories = m.memories.get(), .knowledge = m.knowledge.get(), .skills = m.skills.get()});
  return Status::Ok();
}

Status StartModules(Modules& m) {
  if (Status st = m.memories->Start(); !st.ok()) return st;
  if (Status st = m.knowledge->Start(); !st.ok()) return st;
  if (Status st = m.skills->Start(); !st.ok()) return st;
  m.leaderboard->Start();
  return Status::Ok();
}

void AddModuleMetrics(Metrics& metrics, Modules& m) {
  metrics.AddGaugeSource(
      [store = m.store.get()](std::string& out) { AppendStoreMetrics(store->GetStats(), out); });
  metrics.AddGaugeSource([&m](std::string& out) {
    m.leaderboard->AppendMetrics(out);
    m.memories->AppendMetrics(out);
    m.knowledge->AppendMetrics(out);
    m.skills->AppendMetrics(out);
    AppendRerankMetrics(m.leaderboard->service()->rerank(), m.memories->service()->rerank(), out);
    m.retrieval->AppendMetrics(out);
    m.embedding->AppendMetrics(out);
  });
}

void RegisterRoutes(Router& router, Modules& m, Metrics& metrics, const ApiKeyAuth& auth) {
  RegisterOpsRoutes(router, m.store.get(), &metrics);
  RegisterWorkspaceRoutes(router, m.store.get(), &auth);  // what each workspace holds
  m.leaderboard->RegisterRoutes(router);
  m.memories->RegisterRoutes(router);  // V4 and mem0's Platform API (docs/mem0.md)
  m.knowledge->RegisterRoutes(router);
  m.skills->RegisterRoutes(router);
  m.mcp->RegisterRoutes(router);    // MCP at /mcp (docs/mcp.md)
  console::RegisterRoutes(router);  // the web console at /console (docs/console.md)
}

bool ShutdownModules(Modules& m) {
  // Events, skill tasks and documents still queued stay pending in the store and run at the next
  // start.
  m.memories->Shutdown();
  m.skills->Shutdown();
  m.knowledge->Shutdown();
  // Vectors still being computed are dropped (the backfill redoes them at the next start) rather
  // than holding up shutdown behind a long text in the model.
  const bool workers_done = m.retrieval->Shutdown(std::chrono::milliseconds(1000));
  m.leaderboard->Shutdown();  // the store goes next: nothing may call into it afterwards
  m.store.reset();            // SQLite: drains the writer and checkpoints the WAL
  return workers_done;
}

}  // namespace engram
