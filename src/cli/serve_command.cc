#include "cli/serve_command.h"

#include <signal.h>
#include <spdlog/spdlog.h>
#include <sys/resource.h>

#include <cstdlib>
#include <iostream>
#include <memory>
#include <string>

#include "api/app.h"
#include "api/auth.h"
#include "api/metrics.h"
#include "api/openapi_check.h"
#include "api/ops_api.h"
#include "api/router.h"
#include "api/workspaces_api.h"
#include "common/kernel_family.h"
#include "console/routes.h"
#include "modules/embedding_module.h"
#include "modules/knowledge_module.h"
#include "modules/leaderboard_module.h"
#include "modules/mcp_module.h"
#include "modules/memory_module.h"
#include "modules/retrieval_module.h"
#include "modules/skills_module.h"
#include "modules/startup.h"
#include "modules/store_module.h"
#include "modules/transport_module.h"
#include "server/http_server.h"

namespace engram {

namespace {

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

// The features of the server, built in dependency order (the store first) and destroyed in the
// reverse one, so each outlives everything built on it.
struct Modules {
  std::unique_ptr<Store> store;
  std::unique_ptr<EmbeddingModule> embedding;
  std::unique_ptr<RetrievalModule> retrieval;  // the shard budget outlives every shard cache
  std::unique_ptr<LeaderboardModule> leaderboard;
  std::unique_ptr<MemoryModule> memories;
  std::unique_ptr<KnowledgeModule> knowledge;
  std::unique_ptr<SkillsModule> skills;
  std::unique_ptr<mcp::McpService> mcp;
};

// Keeps a built module in `target`, or passes its error on.
template <class T>
Status Keep(Result<std::unique_ptr<T>> built, std::unique_ptr<T>& target) {
  if (!built.ok()) return built.status();
  target = std::move(built).value();
  return Status::Ok();
}

Status BuildModules(const ServeOptions& options, KernelFamily family, const ApiKeyAuth& auth,
                    Modules& m) {
  ENGRAM_RETURN_IF_ERROR(Keep(OpenStore(options), m.store));
  ENGRAM_RETURN_IF_ERROR(Keep(EmbeddingModule::Build(options, family), m.embedding));
  const Embedder* embedder = m.embedding->search();
  ENGRAM_RETURN_IF_ERROR(
      Keep(RetrievalModule::Build(options, {.vectors = m.store.get(),
                                            .search_embedder = embedder,
                                            .background_embedder = m.embedding->background()}),
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

// Resumes the asynchronous work a previous run left unfinished and starts the background threads.
Status StartModules(Modules& m) {
  if (Status st = m.memories->Start(); !st.ok()) return st;
  if (Status st = m.knowledge->Start(); !st.ok()) return st;
  if (Status st = m.skills->Start(); !st.ok()) return st;
  m.leaderboard->Start();
  return Status::Ok();
}

// Each module's figures, rendered when /metrics is asked.
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

// Every API's routes; the served /openapi.json must describe exactly these (openapi_check.h).
Status RegisterRoutes(Router& router, Modules& m, Metrics& metrics, const ApiKeyAuth& auth) {
  RegisterOpsRoutes(router, m.store.get(), &metrics);
  RegisterWorkspaceRoutes(router, m.store.get(), &auth);  // what each workspace holds
  m.leaderboard->RegisterRoutes(router);
  m.memories->RegisterRoutes(router);  // V4 and mem0's Platform API (docs/mem0.md)
  m.knowledge->RegisterRoutes(router);
  m.skills->RegisterRoutes(router);
  m.mcp->RegisterRoutes(router);    // MCP at /mcp (docs/mcp.md)
  console::RegisterRoutes(router);  // the web console at /console (docs/console.md)
  if (auto problems = CompareRoutesWithOpenApi(router, OpenApiDocument()); !problems.empty()) {
    for (const auto& p : problems) spdlog::error("route table and openapi.json disagree: {}", p);
    return StartFailure("the route table and openapi.json disagree");
  }
  return Status::Ok();
}

// Stops the background work, then closes the store. False when a vector worker is still inside
// the model (it will never touch the closed store; the process exits without waiting for it).
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

// Blocks the shutdown signals in every thread; RunServe waits for them with sigwait.
sigset_t BlockShutdownSignals() {
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGTERM);
  sigaddset(&signals, SIGINT);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);
  signal(SIGPIPE, SIG_IGN);
  return signals;
}

}  // namespace

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
  sigset_t signals = BlockShutdownSignals();
  RaiseOpenFileLimit(options.max_connections);
  auto auth = ApiKeyAuth::FromSpecs(options.api_keys);
  if (!auth.ok()) {
    spdlog::error("{}", auth.status().message());
    return 2;
  }
  if (auth->dev_mode()) {
    spdlog::warn("no API key configured: development mode, no authentication, loopback only");
  }

  Modules modules;
  Metrics metrics;
  Router router;
  Status ready = BuildModules(options, *family, *auth, modules);
  if (ready.ok()) ready = StartModules(modules);
  if (ready.ok()) ready = RegisterRoutes(router, modules, metrics, *auth);
  if (!ready.ok()) {
    spdlog::error("{}", ready.message());
    return StartExitCode(ready);
  }
  AddModuleMetrics(metrics, modules);
  RequestGuard guard({.dev_mode = auth->dev_mode(),
                      .allowed_origins = options.allowed_origins,
                      .allowed_hosts = options.allowed_hosts});
  App app(std::move(router), &*auth, &metrics, &guard);
  HttpServer server(
      TransportOptions(options, &app), [&app](const HttpRequest& r) { return app.Handle(r); },
      [&app](StatusCode code, const std::string& msg) {
        return app.RenderTransportError(code, msg);
      });
  // Before Start: no request renders metrics yet.
  metrics.AddGaugeSource(
      [&server](std::string& out) { AppendTransportMetrics(server.stats(), out); });
  metrics.AddGaugeSource(AppendBuildInfoMetric);
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
  const bool workers_done = ShutdownModules(modules);
  spdlog::info("shutdown complete");
  if (!workers_done) {
    // A worker is still inside the model; it will never touch the (closed) store. Exit without
    // waiting for it.
    spdlog::default_logger()->flush();
    std::cout.flush();
    std::_Exit(0);
  }
  return 0;
}

}  // namespace engram
