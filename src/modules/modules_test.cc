// The feature modules built from serve options: flags reach the parts they configure, a
// configuration that cannot work is a configuration error (exit 2) and a resource that fails is a
// start failure (exit 1), every module's /metrics figures are well-formed families, and the
// server's /openapi.json is what its route table and the API fragments generate.
#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>

#include "api/auth.h"
#include "api/openapi_markdown.h"
#include "api/ops_api.h"
#include "core/rerank_stage.h"
#include "modules/embedding_module.h"
#include "modules/knowledge_module.h"
#include "modules/leaderboard_module.h"
#include "modules/memory_module.h"
#include "modules/openapi_fragments.h"
#include "modules/retrieval_module.h"
#include "modules/server_modules.h"
#include "modules/skills_module.h"
#include "modules/startup.h"
#include "modules/store_module.h"

namespace engram {
namespace {

class ModulesTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/engram_modules_test_XXXXXX";
    dir_ = mkdtemp(tmpl);
    options_.data_dir = dir_ + "/data";
    options_.embedder = "none";  // no model: these tests are about wiring
    options_.ocr = false;
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  std::string dir_;
  ServeOptions options_;
};

// Each metric family appears once, with its HELP and TYPE lines before its samples.
void ExpectWellFormedFamilies(const std::string& text) {
  std::map<std::string, int> help;
  std::istringstream lines(text);
  std::string line;
  std::string current;
  while (std::getline(lines, line)) {
    if (line.rfind("# HELP ", 0) == 0) {
      current = line.substr(7, line.find(' ', 7) - 7);
      ++help[current];
      continue;
    }
    if (line.rfind("# TYPE ", 0) == 0) {
      EXPECT_EQ(line.substr(7, line.find(' ', 7) - 7), current) << line;
      continue;
    }
    ASSERT_FALSE(current.empty()) << "a sample before any HELP line: " << line;
    const std::string name = line.substr(0, line.find_first_of("{ "));
    EXPECT_TRUE(name == current || name.rfind(current + "_", 0) == 0)
        << "sample " << name << " outside its family " << current;
  }
  for (const auto& [name, count] : help) EXPECT_EQ(count, 1) << name;
}

TEST_F(ModulesTest, RetrievalFlagsReachTheSharedRetrievalOptions) {
  options_.fusion = "rrf";
  options_.neighbours = 2;
  options_.window_share = 0.25;
  options_.bm25_k1 = 1.5;
  options_.shard_memory_mb = 3;
  options_.neighbour_placement = "after";
  auto retrieval = RetrievalModule::Build(options_, {});
  ASSERT_TRUE(retrieval.ok()) << retrieval.status().ToString();
  const RetrievalOptions& r = (*retrieval)->retrieval();
  EXPECT_EQ(r.fusion.method, FusionMethod::kRrf);
  EXPECT_EQ(r.neighbours, 2);
  EXPECT_FLOAT_EQ(r.window_share, 0.25f);
  EXPECT_EQ(r.neighbour_placement, RetrievalOptions::NeighbourPlacement::kAfterHit);
  EXPECT_FLOAT_EQ((*retrieval)->index().bm25.k1, 1.5f);
  EXPECT_EQ((*retrieval)->budget()->limit_bytes(), size_t{3} << 20);
  // No embedder: BM25 only, so there is nothing to backfill.
  EXPECT_EQ((*retrieval)->backfill(), nullptr);
  EXPECT_EQ((*retrieval)->reranker(), nullptr);
}

TEST_F(ModulesTest, AnLlmRerankerWithoutAnEndpointIsAConfigurationError) {
  options_.rerank = "llm";  // and no --llm-url
  auto retrieval = RetrievalModule::Build(options_, {});
  ASSERT_FALSE(retrieval.ok());
  EXPECT_EQ(StartExitCode(retrieval.status()), 2);
  EXPECT_NE(retrieval.status().message().find("reranker"), std::string::npos);
}

TEST_F(ModulesTest, AStoreThatCannotBeOpenedIsAStartFailure) {
  std::filesystem::create_directories(dir_);
  // A file where the data directory should be.
  const std::string file = dir_ + "/not-a-directory";
  { std::ofstream(file) << "x"; }
  options_.data_dir = file;
  auto store = OpenStore(options_);
  ASSERT_FALSE(store.ok());
  EXPECT_EQ(StartExitCode(store.status()), 1);
  EXPECT_NE(store.status().message().find(file), std::string::npos);
}

TEST_F(ModulesTest, AnInvalidMem0WorkspaceIsAConfigurationError) {
  auto store = OpenStore(options_);
  ASSERT_TRUE(store.ok()) << store.status().ToString();
  auto retrieval = RetrievalModule::Build(options_, {.vectors = store->get()});
  ASSERT_TRUE(retrieval.ok());
  auto auth = ApiKeyAuth::FromSpecs({});
  ASSERT_TRUE(auth.ok());
  options_.mem0_workspace = "not a workspace/";
  auto memories = MemoryModule::Build(
      options_, {.store = store->get(), .retrieval = retrieval->get(), .auth = &*auth});
  ASSERT_FALSE(memories.ok());
  EXPECT_EQ(StartExitCode(memories.status()), 2);
  EXPECT_NE(memories.status().message().find("--mem0-workspace"), std::string::npos);
}

TEST_F(ModulesTest, EveryModuleRendersWellFormedMetrics) {
  auto store = OpenStore(options_);
  ASSERT_TRUE(store.ok()) << store.status().ToString();
  auto embedding = EmbeddingModule::Build(options_, KernelFamily::kScalar);
  ASSERT_TRUE(embedding.ok());
  EXPECT_EQ((*embedding)->search(), nullptr);  // --embedder none
  auto retrieval = RetrievalModule::Build(options_, {.vectors = store->get()});
  ASSERT_TRUE(retrieval.ok());
  auto auth = ApiKeyAuth::FromSpecs({});
  ASSERT_TRUE(auth.ok());
  Store* s = store->get();
  RetrievalModule* r = retrieval->get();
  auto leaderboard = LeaderboardModule::Build(options_, {.store = s, .retrieval = r});
  auto memories = MemoryModule::Build(options_, {.store = s, .retrieval = r, .auth = &*auth});
  auto knowledge = KnowledgeModule::Build(options_, {.store = s, .retrieval = r});
  auto skills = SkillsModule::Build(options_, {.store = s, .retrieval = r});
  ASSERT_TRUE(leaderboard.ok() && memories.ok() && knowledge.ok() && skills.ok());
  ASSERT_TRUE((*memories)->Start().ok());
  ASSERT_TRUE((*knowledge)->Start().ok());
  ASSERT_TRUE((*skills)->Start().ok());

  std::string out;
  AppendStoreMetrics(s->GetStats(), out);
  (*leaderboard)->AppendMetrics(out);
  (*memories)->AppendMetrics(out);
  (*knowledge)->AppendMetrics(out);
  (*skills)->AppendMetrics(out);
  AppendRerankMetrics((*leaderboard)->service()->rerank(), (*memories)->service()->rerank(), out);
  (*retrieval)->AppendMetrics(out);
  (*embedding)->AppendMetrics(out);
  ExpectWellFormedFamilies(out);
  for (const char* name :
       {"engram_store_memories", "engram_shard_memories", "engram_memory_events_queued",
        "engram_kb_jobs_queued", "engram_skill_tasks_queued", "engram_reranks_total",
        "engram_shard_bytes", "engram_vector_queue"}) {
    EXPECT_NE(out.find(std::string("# HELP ") + name + " "), std::string::npos) << name;
  }
  // Without a model there are no model figures.
  EXPECT_EQ(out.find("engram_embed_seconds_total"), std::string::npos);

  (*skills)->Shutdown();
  (*knowledge)->Shutdown();
  (*memories)->Shutdown();
  (*leaderboard)->Shutdown();
}

// src/api/openapi.json is generated (`engram openapi`) from the route table `engram serve` builds
// and the fragments beside each API's code: the checked-in copy, which the server serves, must be
// what this build generates (a route without its description, a description of no route, a
// dangling $ref fail the generation).
TEST_F(ModulesTest, TheServedOpenApiDocumentIsGeneratedFromTheRoutes) {
  auto generated = GenerateServerOpenApi();
  ASSERT_TRUE(generated.ok()) << generated.status().message();
  EXPECT_GT(generated->size(), 100000u);
  EXPECT_EQ(*generated, OpenApiDocument())
      << "src/api/openapi.json is stale: run build/engram openapi > src/api/openapi.json";
}

// docs/api/endpoints.md is rendered from that document (`engram endpoints-doc`).
TEST_F(ModulesTest, TheEndpointsPageIsRenderedFromTheDocument) {
  auto page = EndpointsMarkdown(OpenApiDocument());
  ASSERT_TRUE(page.ok()) << page.status().message();
  std::ifstream in(std::string(ENGRAM_TEST_SOURCE_DIR) + "/docs/api/endpoints.md");
  ASSERT_TRUE(in) << "docs/api/endpoints.md is missing: run build/engram endpoints-doc > "
                     "docs/api/endpoints.md";
  std::stringstream text;
  text << in.rdbuf();
  EXPECT_EQ(text.str(), *page)
      << "docs/api/endpoints.md is stale: run build/engram endpoints-doc > docs/api/endpoints.md";
}

}  // namespace
}  // namespace engram
