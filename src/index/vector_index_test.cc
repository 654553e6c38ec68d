#include "index/vector_index.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <set>

#include "index/fusion.h"
#include "index/test_vectors.h"

namespace engram {
namespace {

using test_vectors::DotF;
using test_vectors::RandomUnit;

TEST(VectorIndexTest, ExactSearchFindsNearestAndHonoursRemoveAndFilter) {
  std::mt19937 rng(3);
  VectorIndex index({.dim = 64, .hnsw_threshold = 0});
  std::vector<std::vector<float>> vecs;
  for (DocId d = 0; d < 200; ++d) {
    vecs.push_back(RandomUnit(rng, 64));
    index.Set(d, vecs.back().data());
  }
  auto hits = index.Search(vecs[17].data(), 5);
  ASSERT_EQ(hits.size(), 5u);
  EXPECT_EQ(hits[0].doc, 17u);
  EXPECT_NEAR(hits[0].score, 1.0, 0.02);
  for (size_t i = 1; i < hits.size(); ++i) EXPECT_GE(hits[i - 1].score, hits[i].score);

  index.Remove(17);
  EXPECT_FALSE(index.Contains(17));
  for (const auto& h : index.Search(vecs[17].data(), 10)) EXPECT_NE(h.doc, 17u);

  std::function<bool(DocId)> even = [](DocId d) { return d % 2 == 0; };
  auto filtered = index.Search(vecs[21].data(), 10, &even);
  ASSERT_EQ(filtered.size(), 10u);
  for (const auto& h : filtered) EXPECT_EQ(h.doc % 2, 0u);
  EXPECT_EQ(index.size(), 199u);
}

// Measures what int8 codes cost in ranking: overlap of the top 10 with exact float32 ranking.
TEST(VectorIndexTest, Int8RecallAgainstFloat) {
  std::mt19937 rng(4);
  const int dim = 512, n = 3000;
  VectorIndex index({.dim = dim, .hnsw_threshold = 0});
  std::vector<std::vector<float>> vecs;
  for (DocId d = 0; d < n; ++d) {
    vecs.push_back(RandomUnit(rng, dim));
    index.Set(d, vecs.back().data());
  }
  double overlap = 0;
  const int queries = 30;
  for (int q = 0; q < queries; ++q) {
    // Queries near a stored vector, as real queries sit near their answers.
    auto query = vecs[static_cast<size_t>(q * 7)];
    auto noise = RandomUnit(rng, dim);
    for (int i = 0; i < dim; ++i) query[i] = query[i] * 0.5f + noise[i] * 0.5f;
    std::vector<std::pair<float, DocId>> exact;
    for (DocId d = 0; d < n; ++d) exact.push_back({-DotF(query, vecs[d]), d});
    std::sort(exact.begin(), exact.end());
    std::set<DocId> truth;
    for (int i = 0; i < 10; ++i) truth.insert(exact[i].second);
    for (const auto& h : index.Search(query.data(), 10)) overlap += truth.count(h.doc);
  }
  double recall = overlap / (queries * 10);
  std::printf("int8 recall@10 vs float32: %.3f\n", recall);
  EXPECT_GE(recall, 0.9);
}

TEST(VectorIndexTest, HnswAnswersLargeScopes) {
  std::mt19937 rng(5);
  const int dim = 64, n = 2000;
  VectorIndex index({.dim = dim, .hnsw_threshold = 500, .hnsw_build_in_background = false});
  std::vector<std::vector<float>> vecs;
  for (DocId d = 0; d < n; ++d) {
    vecs.push_back(RandomUnit(rng, dim));
    index.Set(d, vecs.back().data());
  }
  EXPECT_TRUE(index.uses_hnsw());
  int found = 0;
  for (DocId d = 0; d < 100; ++d) found += index.Search(vecs[d].data(), 1)[0].doc == d;
  EXPECT_GE(found, 95);
  index.Remove(3);
  for (const auto& h : index.Search(vecs[3].data(), 5)) EXPECT_NE(h.doc, 3u);
}

// A batch (a shard's load) builds the graph once at its end, from two threads here; it must
// answer as the graph built one insertion at a time does, and honour what the batch removed or
// replaced.
TEST(VectorIndexTest, BatchBuildsTheGraphAtItsEnd) {
  std::mt19937 rng(7);
  const int dim = 64, n = 6000;
  std::vector<std::vector<float>> vecs;
  for (DocId d = 0; d < n; ++d) vecs.push_back(RandomUnit(rng, dim));
  VectorIndex one_by_one({.dim = dim, .hnsw_threshold = 500, .hnsw_build_in_background = false});
  VectorIndex batched({.dim = dim,
                       .hnsw_threshold = 500,
                       .hnsw_build_threads = 2,
                       .hnsw_build_in_background = false});
  for (DocId d = 0; d < n; ++d) one_by_one.Set(d, vecs[d].data());
  batched.BeginBatch();
  for (DocId d = 0; d < n; ++d) batched.Set(d, vecs[d].data());
  EXPECT_FALSE(batched.uses_hnsw());  // nothing built before the batch ends
  batched.Remove(10);
  batched.Set(11, vecs[12].data());  // replaced: 11 now has 12's vector
  batched.EndBatch();
  ASSERT_TRUE(batched.uses_hnsw());
  EXPECT_EQ(batched.size(), n - 1u);
  int found_batched = 0, found_one_by_one = 0;
  for (DocId d = 100; d < 400; ++d) {
    found_batched += batched.Search(vecs[d].data(), 1)[0].doc == d;
    found_one_by_one += one_by_one.Search(vecs[d].data(), 1)[0].doc == d;
  }
  EXPECT_GE(found_batched, 285);
  EXPECT_GE(found_batched, found_one_by_one - 6);
  for (const auto& h : batched.Search(vecs[10].data(), 5)) EXPECT_NE(h.doc, 10u);
  std::set<DocId> twelves;
  for (const auto& h : batched.Search(vecs[12].data(), 2)) twelves.insert(h.doc);
  EXPECT_EQ(twelves, (std::set<DocId>{11, 12}));

  // A second batch adds to the graph already built.
  batched.BeginBatch();
  for (DocId d = 0; d < 3000; ++d) batched.Set(n + d, RandomUnit(rng, dim).data());
  batched.Set(10, vecs[10].data());  // back after its removal
  batched.EndBatch();
  EXPECT_EQ(batched.size(), n + 3000u);
  EXPECT_EQ(batched.Search(vecs[10].data(), 1)[0].doc, 10u);
}

// The first build runs in the background: the exact scan answers meanwhile, writes made during
// the build reach the graph (added, replaced, removed and re-added docs), and the graph answers
// once it holds them all. Writers and searches here are one thread, as under a shard's lock; the
// builder is the other.
TEST(VectorIndexTest, BackgroundBuildCatchesUpWithWritesMadeMeanwhile) {
  std::mt19937 rng(11);
  const int dim = 32, n = 6000, later = 3000;
  std::vector<std::vector<float>> vecs;
  for (DocId d = 0; d < n + later; ++d) vecs.push_back(RandomUnit(rng, dim));
  VectorIndex index({.dim = dim, .hnsw_threshold = 500, .hnsw_build_threads = 2});
  index.BeginBatch();
  for (DocId d = 0; d < n; ++d) index.Set(d, vecs[d].data());
  index.EndBatch();
  // Whether or not the builder has finished yet, every answer is right.
  for (DocId d = 0; d < later; ++d) {
    index.Set(n + d, vecs[n + d].data());
    if (d % 500 == 0) {
      const auto hits = index.Search(vecs[n + d].data(), 1);
      ASSERT_EQ(hits.size(), 1u);
      if (!index.uses_hnsw()) {
        EXPECT_EQ(hits[0].doc, n + d);  // the exact scan
      }
    }
  }
  index.Remove(20);
  index.Set(21, vecs[22].data());  // replaced: 21 now has 22's vector
  index.Remove(30);
  index.Set(30, vecs[31].data());  // removed, then back with 31's vector
  index.WaitForGraph();
  ASSERT_TRUE(index.uses_hnsw());
  EXPECT_FALSE(index.building_graph());
  EXPECT_EQ(index.size(), static_cast<size_t>(n + later - 1));
  int found = 0;
  for (DocId d = 100; d < 400; ++d) found += index.Search(vecs[d].data(), 1)[0].doc == d;
  for (DocId d = n; d < n + 300; ++d) found += index.Search(vecs[d].data(), 1)[0].doc == d;
  EXPECT_GE(found, 570);
  for (const auto& h : index.Search(vecs[20].data(), 5)) EXPECT_NE(h.doc, 20u);
  std::set<DocId> twentytwos, thirtyones;
  for (const auto& h : index.Search(vecs[22].data(), 2)) twentytwos.insert(h.doc);
  for (const auto& h : index.Search(vecs[31].data(), 2)) thirtyones.insert(h.doc);
  EXPECT_EQ(twentytwos, (std::set<DocId>{21, 22}));
  EXPECT_EQ(thirtyones, (std::set<DocId>{30, 31}));
}

// An index destroyed while its graph is being built stops the builder and frees everything
// (ASan and TSan runs check the rest).
TEST(VectorIndexTest, DestroyingAnIndexStopsItsBuild) {
  std::mt19937 rng(13);
  const int dim = 32;
  for (int round = 0; round < 3; ++round) {
    VectorIndex index({.dim = dim, .hnsw_threshold = 500});
    index.BeginBatch();
    for (DocId d = 0; d < 20000; ++d) index.Set(d, RandomUnit(rng, dim).data());
    index.EndBatch();
    EXPECT_GT(index.MemoryBytes(), 0u);
  }
}

// SearchAmong scores runs of consecutive DocIds a block at a time and lone docs one by one: the
// result must be what scoring every listed doc on its own gives, whatever the runs look like.
TEST(VectorIndexTest, SearchAmongMatchesScoringEachDoc) {
  const int dim = 64;
  std::mt19937 rng(7);
  VectorIndex index({.dim = dim, .hnsw_threshold = 0});
  for (DocId d = 0; d < 1500; ++d) index.Set(d, RandomUnit(rng, dim).data());
  for (DocId d = 100; d < 1500; d += 37) index.Remove(d);
  // Runs longer than a block, short runs, lone docs, absent docs and ids beyond the index.
  std::vector<DocId> docs;
  for (DocId d = 0; d < 700; ++d) docs.push_back(d);
  for (DocId d = 701; d < 1400; d += 3) docs.push_back(d);
  for (DocId d = 1400; d < 1500; ++d) docs.push_back(d);
  docs.push_back(5000);
  const std::function<bool(DocId)> odd = [](DocId d) { return d % 2 == 1; };
  for (const std::function<bool(DocId)>* filter : {static_cast<decltype(&odd)>(nullptr), &odd}) {
    for (int trial = 0; trial < 5; ++trial) {
      const auto q = RandomUnit(rng, dim);
      std::vector<ScoredDoc> expected;
      for (DocId d : docs) {
        auto s = index.Similarity(q.data(), d);
        if (s && (filter == nullptr || (*filter)(d))) expected.push_back({d, *s});
      }
      for (size_t k : {1u, 10u, 200u, 5000u}) {
        std::vector<ScoredDoc> want = expected;
        KeepTopK(want, k);
        const auto got = index.SearchAmong(q.data(), k, docs, filter);
        ASSERT_EQ(got.size(), want.size()) << k;
        for (size_t i = 0; i < got.size(); ++i) {
          EXPECT_EQ(got[i].doc, want[i].doc) << k << " " << i;
          EXPECT_EQ(got[i].score, want[i].score) << k << " " << i;
        }
      }
    }
  }
}

TEST(FusionTest, ScoreSumNormalisesAndWeights) {
  std::vector<ScoredDoc> bm25 = {{1, 10}, {2, 5}, {3, 0}};
  std::vector<ScoredDoc> vec = {{3, 0.9f}, {1, 0.5f}, {4, 0.1f}};
  auto fused = Fuse(bm25, vec, 10, {.method = FusionMethod::kScoreSum, .vector_weight = 0.5f});
  ASSERT_EQ(fused.size(), 4u);
  EXPECT_EQ(fused[0].doc, 1u);  // 0.5*1 + 0.5*0.5
  EXPECT_NEAR(fused[0].score, 0.75, 1e-6);
  auto bm25_only = Fuse(bm25, vec, 2, {.method = FusionMethod::kScoreSum, .vector_weight = 0.0f});
  ASSERT_EQ(bm25_only.size(), 2u);
  EXPECT_EQ(bm25_only[0].doc, 1u);
  EXPECT_EQ(bm25_only[1].doc, 2u);
  auto z = Fuse(bm25, vec, 10, {.method = FusionMethod::kZScore});
  ASSERT_EQ(z.size(), 4u);
  EXPECT_EQ(z[0].doc, 1u);
  for (const auto& s : z) {
    EXPECT_GT(s.score, 0.0f);
    EXPECT_LT(s.score, 1.0f);
  }
  EXPECT_EQ(z[3].doc, 4u);  // weakest in the only list it is in, and absent from BM25
  // A single BM25 match still stands out against documents only the vector side returned.
  auto single =
      Fuse({{7, 3.0f}}, {{8, 0.9f}, {7, 0.5f}, {9, 0.4f}}, 3, {.method = FusionMethod::kZScore});
  ASSERT_EQ(single.size(), 3u);
  EXPECT_EQ(single[0].doc, 7u);
  auto rrf = Fuse(bm25, vec, 10, {.method = FusionMethod::kRrf});
  EXPECT_EQ(rrf[0].doc, 1u);  // ranks 1 and 2
}

TEST(FusionTest, PriorLiftsCandidatesRelativeToTheBest) {
  std::vector<ScoredDoc> bm25 = {{1, 10}, {2, 6}, {3, 5.8f}};
  std::vector<ScoredDoc> vec = {{1, 0.9f}, {2, 0.6f}, {3, 0.58f}};
  std::function<float(DocId)> prior = [](DocId d) { return d == 3 ? 1.0f : 0.0f; };
  for (FusionMethod method : {FusionMethod::kZScore, FusionMethod::kScoreSum}) {
    FusionOptions options{.method = method};
    auto plain = Fuse(bm25, vec, 10, options, &prior);  // weight 0: no effect
    EXPECT_EQ(plain[1].doc, 2u);
    options.prior_weight = 0.1f;
    auto lifted = Fuse(bm25, vec, 10, options, &prior);
    ASSERT_EQ(lifted.size(), 3u);
    EXPECT_EQ(lifted[0].doc, 1u) << "a small weight does not overturn a clear winner";
    EXPECT_EQ(lifted[1].doc, 3u) << "but lifts a candidate above its close neighbour";
    if (method == FusionMethod::kZScore) {
      for (const auto& s : lifted) EXPECT_LT(s.score, 1.0f);
    }
  }
}

}  // namespace
}  // namespace engram
