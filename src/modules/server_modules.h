// The server's features as one set: built from the serve options in dependency order, started,
// routed, measured and stopped. `engram serve` composes them around its HTTP server; the contract
// test builds the same set (no model) to compare its route table with openapi.json.
//
// Thread-safety: BuildModules, StartModules, RegisterRoutes and ShutdownModules run on the thread
// that composes the server; the gauge sources AddModuleMetrics installs run on any thread.
// Ownership: Modules owns every part; it is destroyed in the reverse order of its members.
#pragma once

#include <memory>

#include "api/auth.h"
#include "api/metrics.h"
#include "api/router.h"
#include "common/kernel_family.h"
#include "common/status.h"
#include "config/serve_options.h"
#include "mcp/mcp_service.h"
#include "modules/embedding_module.h"
#include "modules/knowledge_module.h"
#include "modules/leaderboard_module.h"
#include "modules/memory_module.h"
#include "modules/retrieval_module.h"
#include "modules/skills_module.h"
#include "store/store.h"

namespace engram {

// The features of the server, destroyed in the reverse order of construction, so each outlives
// everything built on it (the store first, the MCP service last).
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

// Opens the store and builds every module on it. `auth` must outlive `m`.
Status BuildModules(const ServeOptions& options, KernelFamily family, const ApiKeyAuth& auth,
                    Modules& m);

// Resumes the asynchronous work a previous run left unfinished and starts the background threads.
Status StartModules(Modules& m);

// Every API's routes: the server's whole route table, which /openapi.json describes (the contract
// test compares the two). `metrics` and `auth` must outlive the router.
void RegisterRoutes(Router& router, Modules& m, Metrics& metrics, const ApiKeyAuth& auth);

// Each module's figures, rendered when /metrics is asked. `m` must outlive `metrics`' use.
void AddModuleMetrics(Metrics& metrics, Modules& m);

// Stops the background work, then closes the store. False when a vector worker is still inside
// the model (it will never touch the closed store; the process exits without waiting for it).
bool ShutdownModules(Modules& m);

}  // namespace engram
