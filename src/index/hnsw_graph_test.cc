// A saved vector graph taken back by a later load: matched by content whatever the DocIds, the
// stale elements dropped, and any damaged file refused (the index then builds anew).
#include "index/hnsw_graph.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <random>
#include <set>

#include "index/int8_vectors.h"
#include "index/test_vectors.h"
#include "index/vector_index.h"

namespace engram {
namespace {

using test_vectors::RandomUnit;

constexpr int kDim = 32;

class HnswGraphFileTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() /
           ("engram_hnsw_graph_test_" + std::to_string(::getpid()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_);
    path_ = (dir_ / "scope.hnsw").string();
    std::mt19937 rng(11);
    for (int i = 0; i < 3000; ++i) vecs_.push_back(RandomUnit(rng, kDim));
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  VectorIndexOptions Options() const {
    return {
        .dim = kDim, .hnsw_threshold = 500, .hnsw_build_in_background = false, .graph_file = path_};
  }
  // An index holding vecs_[first, last) as DocIds starting at `base`, in order.
  std::unique_ptr<VectorIndex> Load(size_t first, size_t last, DocId base) const {
    auto index = std::make_unique<VectorIndex>(Options());
    index->BeginBatch();
    for (size_t i = first; i < last; ++i) {
      index->Set(base + static_cast<DocId>(i - first), vecs_[i].data());
    }
    index->EndBatch();
    index->WaitForGraph();
    return index;
  }
  // Recall@10 of `index` (whose DocId for vecs_[i] is base + i - first) against the exact answer
  // over vecs_[first, last).
  double Recall(const VectorIndex& index, size_t first, size_t last, DocId base) const {
    VectorIndex exact({.dim = kDim, .hnsw_threshold = 0});
    for (size_t i = first; i < last; ++i) {
      exact.Set(base + static_cast<DocId>(i - first), vecs_[i].data());
    }
    size_t found = 0, wanted = 0;
    for (size_t q = first; q < last; q += 37) {
      std::set<DocId> truth;
      for (const auto& h : exact.Search(vecs_[q].data(), 10)) truth.insert(h.doc);
      for (const auto& h : index.Search(vecs_[q].data(), 10)) found += truth.count(h.doc);
      wanted += truth.size();
    }
    return static_cast<double>(found) / static_cast<double>(wanted);
  }

  std::filesystem::path dir_;
  std::string path_;
  std::vector<std::vector<float>> vecs_;
};

TEST_F(HnswGraphFileTest, ALoadTakesTheSavedGraphUnderNewDocIds) {
  {
    auto first = Load(0, 2000, 0);
    ASSERT_TRUE(first->uses_hnsw());
    EXPECT_EQ(first->graph_adopted(), 0u);
    ASSERT_TRUE(first->SaveGraph().ok());
  }
  ASSERT_TRUE(std::filesystem::exists(path_));
  ASSERT_TRUE(std::filesystem::exists(path_ + ".meta"));
  // The same vectors under DocIds shifted by 5,000: every element is taken, none inserted, and
  // each answer names the new DocIds.
  auto second = Load(0, 2000, 5000);
  ASSERT_TRUE(second->uses_hnsw());
  EXPECT_EQ(second->graph_adopted(), 2000u);
  auto hits = second->Search(vecs_[123].data(), 5);
  ASSERT_FALSE(hits.empty());
  EXPECT_EQ(hits[0].doc, 5123u);
  EXPECT_GE(Recall(*second, 0, 2000, 5000), 0.9);
  // Unchanged since it was taken: nothing to write.
  const auto written = std::filesystem::last_write_time(path_);
  ASSERT_TRUE(second->SaveGraph().ok());
  EXPECT_EQ(std::filesystem::last_write_time(path_), written);
}

TEST_F(HnswGraphFileTest, StaleElementsAreDroppedAndNewVectorsInserted) {
  {
    auto first = Load(0, 2000, 0);
    ASSERT_TRUE(first->SaveGraph().ok());
  }
  // 300 of the saved vectors are gone and 400 new ones came: 1,700 taken, 400 inserted, and the
  // 300 never answer.
  auto second = Load(300, 2400, 0);
  EXPECT_EQ(second->graph_adopted(), 1700u);
  ASSERT_TRUE(second->uses_hnsw());
  EXPECT_GE(Recall(*second, 300, 2400, 0), 0.9);
  // A query for a vector no longer loaded finds only loaded ones, each labelled with the DocId
  // whose vector it holds.
  for (size_t q = 0; q < 300; q += 50) {
    const auto hits = second->Search(vecs_[q].data(), 10);
    ASSERT_FALSE(hits.empty());
    EXPECT_LT(hits[0].score, 0.95f);
    for (const auto& h : hits) {
      EXPECT_NEAR(*second->Similarity(vecs_[q].data(), h.doc), h.score, 1e-5);
    }
  }
  // Changes after the load are written by the next save, and that file is taken in turn: the
  // removed vector (DocId 0, vecs_[300]) is no longer matched, the 2,099 others are.
  second->Remove(0);
  ASSERT_TRUE(second->SaveGraph().ok());
  second.reset();
  auto third = Load(300, 2400, 0);
  EXPECT_EQ(third->graph_adopted(), 2099u);
  EXPECT_EQ(third->Search(vecs_[300].data(), 1)[0].doc, 0u);
}

TEST_F(HnswGraphFileTest, AGraphMatchingTooLittleIsBuiltAnew) {
  {
    auto first = Load(0, 1000, 0);
    ASSERT_TRUE(first->SaveGraph().ok());
  }
  // Only 200 of 1,200 loaded vectors are in the file: building anew is cheaper.
  auto second = Load(800, 2000, 0);
  EXPECT_EQ(second->graph_adopted(), 0u);
  ASSERT_TRUE(second->uses_hnsw());
  EXPECT_GE(Recall(*second, 800, 2000, 0), 0.9);
}

TEST_F(HnswGraphFileTest, AFileHalfOrMoreOfTheVectorsMatchIsTaken) {
  {
    auto first = Load(0, 600, 0);
    ASSERT_TRUE(first->SaveGraph().ok());
  }
  // Nothing in the file is stale; 600 of 1,200 loaded vectors match (half): taken.
  EXPECT_EQ(Load(0, 1200, 0)->graph_adopted(), 600u);
  // 600 of 1,300 (under half): built anew.
  auto more = Load(0, 1300, 0);
  EXPECT_EQ(more->graph_adopted(), 0u);
  ASSERT_TRUE(more->uses_hnsw());
  EXPECT_GE(Recall(*more, 0, 1300, 0), 0.9);
}

TEST_F(HnswGraphFileTest, AFileAQuarterStaleIsTakenAndOneMoreIsNot) {
  {
    auto first = Load(0, 2000, 0);
    ASSERT_TRUE(first->SaveGraph().ok());
  }
  // Every loaded vector matches; 500 of the file's 2,000 elements are stale (a quarter): taken.
  EXPECT_EQ(Load(500, 2000, 0)->graph_adopted(), 1500u);
  // 501 stale (more than a quarter): built anew, though every loaded vector would match.
  auto fewer = Load(501, 2000, 0);
  EXPECT_EQ(fewer->graph_adopted(), 0u);
  ASSERT_TRUE(fewer->uses_hnsw());
  EXPECT_GE(Recall(*fewer, 501, 2000, 0), 0.9);
}

TEST_F(HnswGraphFileTest, WritesWhileASavedGraphIsTakenBackReachTheGraph) {
  {
    auto first = Load(0, 2000, 0);
    ASSERT_TRUE(first->SaveGraph().ok());
  }
  VectorIndexOptions options = Options();
  options.hnsw_build_in_background = true;
  VectorIndex index(options);
  index.BeginBatch();
  for (size_t i = 0; i < 2000; ++i) index.Set(static_cast<DocId>(i), vecs_[i].data());
  index.EndBatch();  // the graph is taken back on a thread of its own while these writes go on
  for (size_t i = 2000; i < 2600; ++i) index.Set(static_cast<DocId>(i), vecs_[i].data());
  for (DocId d = 0; d < 300; d += 3) index.Remove(d);
  for (DocId d = 1; d < 300; d += 3) index.Set(d, vecs_[2600 + d].data());  // replaced vectors
  index.WaitForGraph();
  ASSERT_TRUE(index.uses_hnsw());
  EXPECT_GT(index.graph_adopted(), 0u);
  // Every write is in the graph: a new or replaced vector finds its DocId first, a removed one is
  // never answered, and a replaced DocId is not found by its old vector.
  for (size_t i = 2000; i < 2600; i += 7) {
    EXPECT_EQ(index.Search(vecs_[i].data(), 1)[0].doc, static_cast<DocId>(i));
  }
  for (DocId d = 0; d < 300; d += 3) {
    for (const auto& h : index.Search(vecs_[d].data(), 10)) EXPECT_NE(h.doc, d);
    const auto replaced = index.Search(vecs_[2601 + d].data(), 1);
    EXPECT_EQ(replaced[0].doc, d + 1);
    const auto old = index.Search(vecs_[d + 1].data(), 1);
    EXPECT_NE(old[0].doc, d + 1);
  }
}

TEST_F(HnswGraphFileTest, ADamagedFileIsRefusedAndTheGraphBuiltAnew) {
  {
    auto first = Load(0, 1000, 0);
    ASSERT_TRUE(first->SaveGraph().ok());
  }
  const auto size = std::filesystem::file_size(path_);
  // A flipped byte in the links: the checksum refuses it (hnswlib's reader would not).
  {
    std::fstream f(path_, std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(static_cast<std::streamoff>(size / 2));
    char c;
    f.read(&c, 1);
    f.seekp(static_cast<std::streamoff>(size / 2));
    c = static_cast<char>(c ^ 0x5a);
    f.write(&c, 1);
  }
  HnswGraphOptions graph_options{.dim = kDim};
  auto loaded = HnswGraph::Load(path_, graph_options, 0);
  EXPECT_FALSE(loaded.ok());
  auto second = Load(0, 1000, 0);
  EXPECT_EQ(second->graph_adopted(), 0u);
  EXPECT_TRUE(second->uses_hnsw());
  // Truncated (a disk that filled mid-write), or of another dimension: refused too.
  ASSERT_TRUE(second->SaveGraph().ok());
  ASSERT_TRUE(HnswGraph::Load(path_, graph_options, 0).ok());
  std::filesystem::resize_file(path_, size - 100);
  EXPECT_FALSE(HnswGraph::Load(path_, graph_options, 0).ok());
  EXPECT_FALSE(HnswGraph::Load(path_, {.dim = kDim * 2}, 0).ok());
  EXPECT_EQ(HnswGraph::Load(path_ + ".none", graph_options, 0).status().code(),
            StatusCode::kNotFound);
}

TEST_F(HnswGraphFileTest, LinksOutOfRangeAreRefusedEvenWithAMatchingChecksum) {
  {
    auto first = Load(0, 1000, 0);
    ASSERT_TRUE(first->SaveGraph().ok());
  }
  HnswGraphOptions graph_options{.dim = kDim};
  ASSERT_TRUE(HnswGraph::Load(path_, graph_options, 0).ok());
  // Element 0's first level-0 link, just past hnswlib's 96-byte header and the list's count,
  // pointed far past the last element; the record's checksum recomputed to match.
  {
    std::fstream f(path_, std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(96 + 4);
    const uint32_t far = 0xFFFFFF00u;
    f.write(reinterpret_cast<const char*>(&far), sizeof(far));
  }
  auto checksum = GraphFileChecksum(path_);
  ASSERT_TRUE(checksum.ok());
  std::ifstream meta_in(path_ + ".meta");
  auto meta = nlohmann::json::parse(meta_in);
  meta["checksum"] = *checksum;
  std::ofstream(path_ + ".meta") << meta.dump();
  auto loaded = HnswGraph::Load(path_, graph_options, 0);
  ASSERT_FALSE(loaded.ok());
  EXPECT_NE(loaded.status().message().find("links out of range"), std::string::npos)
      << loaded.status().ToString();
}

TEST_F(HnswGraphFileTest, EqualVectorsAreEachMatchedOnce) {
  // 100 vectors twice over (equal texts embed equally): each copy takes an element of its own.
  for (size_t i = 0; i < 100; ++i) vecs_[900 + i] = vecs_[i];
  {
    auto first = Load(0, 1000, 0);
    ASSERT_TRUE(first->SaveGraph().ok());
  }
  auto second = Load(0, 1000, 0);
  EXPECT_EQ(second->graph_adopted(), 1000u);
  std::set<DocId> answered;
  for (const auto& h : second->Search(vecs_[5].data(), 2)) answered.insert(h.doc);
  EXPECT_EQ(answered, (std::set<DocId>{5, 905}));
}

TEST_F(HnswGraphFileTest, ASmallScopeRemovesItsSavedGraph) {
  {
    auto first = Load(0, 1000, 0);
    ASSERT_TRUE(first->SaveGraph().ok());
  }
  // Below the threshold the scope searches exactly and keeps no file.
  auto small = Load(0, 100, 0);
  EXPECT_FALSE(small->uses_hnsw());
  ASSERT_TRUE(small->SaveGraph().ok());
  EXPECT_FALSE(std::filesystem::exists(path_));
  EXPECT_FALSE(std::filesystem::exists(path_ + ".meta"));
}

TEST_F(HnswGraphFileTest, ADiscardedGraphIsRemovedAndNeverSavedAgain) {
  auto index = Load(0, 1000, 0);
  ASSERT_TRUE(index->SaveGraph().ok());
  ASSERT_TRUE(std::filesystem::exists(path_));
  index->DiscardSavedGraph();
  EXPECT_FALSE(std::filesystem::exists(path_));
  EXPECT_FALSE(std::filesystem::exists(path_ + ".meta"));
  index->Remove(3);  // a change that would otherwise be saved
  ASSERT_TRUE(index->SaveGraph().ok());
  EXPECT_FALSE(std::filesystem::exists(path_));
}

TEST_F(HnswGraphFileTest, RemovedVectorsLeaveNoCodeInTheFile) {
  auto index = Load(0, 1000, 0);
  index->Remove(7);
  ASSERT_TRUE(index->SaveGraph().ok());
  HnswGraphOptions graph_options{.dim = kDim};
  auto loaded = HnswGraph::Load(path_, graph_options, 0);
  ASSERT_TRUE(loaded.ok()) << loaded.status().ToString();
  size_t deleted = 0;
  for (size_t e = 0; e < (*loaded)->elements(); ++e) {
    if (!(*loaded)->deleted(e)) continue;
    ++deleted;
    const char* element = (*loaded)->element(e);
    for (size_t b = 0; b < ElementBytes(kDim); ++b) EXPECT_EQ(element[b], 0);
  }
  EXPECT_EQ(deleted, 1u);
}

// Elements of `path`'s graph whose [scale][code] is all zeros, deleted ones left out.
size_t ZeroedElements(const std::string& path) {
  auto loaded = HnswGraph::Load(path, {.dim = kDim}, 0);
  EXPECT_TRUE(loaded.ok()) << loaded.status().ToString();
  if (!loaded.ok()) return 0;
  size_t zeroed = 0;
  for (size_t e = 0; e < (*loaded)->elements(); ++e) {
    if ((*loaded)->deleted(e)) continue;
    const char* element = (*loaded)->element(e);
    zeroed += std::all_of(element, element + ElementBytes(kDim), [](char b) { return b == 0; });
  }
  return zeroed;
}

TEST_F(HnswGraphFileTest, ARemovedOrReplacedVectorLeavesTheSavedFileAtOnce) {
  auto index = Load(0, 1000, 0);
  ASSERT_TRUE(index->SaveGraph().ok());
  EXPECT_EQ(ZeroedElements(path_), 0u);
  // No save follows: the file itself no longer holds either former code, and still loads.
  index->Remove(7);
  index->Set(8, vecs_[2000].data());
  EXPECT_EQ(ZeroedElements(path_), 2u);
  index.reset();
  // The original vectors again: the two zeroed elements match none of them.
  EXPECT_EQ(Load(0, 1000, 0)->graph_adopted(), 998u);
}

TEST_F(HnswGraphFileTest, ABatchsRemovalsAreZeroedInTheFileAtItsEnd) {
  auto index = Load(0, 1000, 0);
  ASSERT_TRUE(index->SaveGraph().ok());
  index->BeginBatch();
  index->Remove(3);
  index->Remove(4);
  index->Set(5, vecs_[2000].data());
  EXPECT_EQ(ZeroedElements(path_), 0u);  // one pass over the file for the batch, at its end
  index->EndBatch();
  EXPECT_EQ(ZeroedElements(path_), 3u);
}

TEST_F(HnswGraphFileTest, ASlotReusedInABatchHasItsOldCodeZeroedAndItsNewVectorFound) {
  // A knowledge base's document replaced: its chunks' slots are removed and taken by the new
  // chunks in one batch.
  auto index = Load(0, 1000, 0);
  ASSERT_TRUE(index->SaveGraph().ok());
  index->BeginBatch();
  for (DocId d = 10; d < 20; ++d) index->Remove(d);
  for (DocId d = 10; d < 20; ++d) index->Set(d, vecs_[2000 + d].data());
  index->EndBatch();
  EXPECT_EQ(ZeroedElements(path_), 10u);
  ASSERT_TRUE(index->uses_hnsw());
  EXPECT_EQ(index->size(), 1000u);
  for (DocId d = 10; d < 20; ++d) {
    const auto hits = index->Search(vecs_[2000 + d].data(), 1);
    ASSERT_EQ(hits.size(), 1u);
    EXPECT_EQ(hits[0].doc, d);
    EXPECT_GT(hits[0].score, 0.95f);
  }
  // Saved again and loaded with the new vectors: every element is taken.
  ASSERT_TRUE(index->SaveGraph().ok());
  index.reset();
  auto again = std::make_unique<VectorIndex>(Options());
  again->BeginBatch();
  for (DocId d = 0; d < 1000; ++d) {
    again->Set(d, vecs_[d >= 10 && d < 20 ? 2000 + d : d].data());
  }
  again->EndBatch();
  again->WaitForGraph();
  EXPECT_EQ(again->graph_adopted(), 1000u);
}

TEST_F(HnswGraphFileTest, ElementsNoLoadedVectorMatchesAreZeroedInTheFile) {
  {
    auto first = Load(0, 2000, 0);
    ASSERT_TRUE(first->SaveGraph().ok());
  }
  // 100 vectors went while the scope was not loaded: their elements' codes leave the file.
  auto second = Load(100, 2000, 0);
  EXPECT_EQ(second->graph_adopted(), 1900u);
  EXPECT_EQ(ZeroedElements(path_), 100u);
  // A vector removed while the graph was being taken back leaves it too.
  second.reset();
  VectorIndexOptions options = Options();
  options.hnsw_build_in_background = true;
  VectorIndex third(options);
  third.BeginBatch();
  for (size_t i = 100; i < 2000; ++i) third.Set(static_cast<DocId>(i - 100), vecs_[i].data());
  third.EndBatch();
  third.Remove(5);
  third.WaitForGraph();
  EXPECT_GE(third.graph_adopted(), 1899u);  // 1,899 when the removal came before its match
  EXPECT_EQ(ZeroedElements(path_), 101u);
}

TEST(HnswGraphZeroTest, ZeroingElementsAcrossBlocksKeepsTheFileValid) {
  // 128-d elements over several 1 MiB blocks, some running from one block into the next.
  constexpr int kWide = 128;
  const auto dir = std::filesystem::temp_directory_path() /
                   ("engram_hnsw_zero_test_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  const std::string path = (dir / "g.hnsw").string();
  const HnswGraphOptions options{.dim = kWide};
  std::mt19937 rng(5);
  constexpr size_t kCount = 9000;
  HnswGraph graph(options, kCount);
  std::vector<char> element(ElementBytes(kWide));
  std::vector<int8_t> code(kWide);
  for (size_t i = 0; i < kCount; ++i) {
    const auto v = RandomUnit(rng, kWide);
    PackElement(element.data(), QuantizeInt8(v.data(), kWide, code.data()), code.data(), kWide);
    graph.Add(element.data(), static_cast<DocId>(i));
  }
  ASSERT_TRUE(graph.Save(path).ok());
  ASSERT_GT(std::filesystem::file_size(path), size_t{2} << 20);
  // hnswlib's level 0 after the 96-byte header: per element [links: 2 * M ids + a count][scale,
  // code][label]. Every element whose [scale][code] runs from one 1 MiB block into the next is
  // zeroed, beside every 7th.
  const size_t kLinks = 2 * 16 * 4 + 4, kPer = kLinks + ElementBytes(kWide) + 8;
  std::vector<size_t> zero;
  size_t crossing = 0;
  for (size_t e = 0; e < kCount; ++e) {
    const size_t begin = 96 + e * kPer + kLinks, last = begin + ElementBytes(kWide) - 1;
    if (begin >> 20 != last >> 20) {
      zero.push_back(e);
      ++crossing;
    }
  }
  ASSERT_GE(crossing, 2u);
  for (size_t e = 0; e < kCount; e += 7) zero.push_back(e);
  zero.push_back(kCount - 1);
  zero.push_back(3);  // out of order and repeated: both fine
  zero.push_back(3);
  ASSERT_TRUE(HnswGraph::ZeroSavedElements(path, zero).ok());
  auto loaded = HnswGraph::Load(path, options, 0);
  ASSERT_TRUE(loaded.ok()) << loaded.status().ToString();
  const std::set<size_t> zeroed(zero.begin(), zero.end());
  for (size_t e = 0; e < kCount; ++e) {
    const char* got = (*loaded)->element(e);
    const bool all_zero =
        std::all_of(got, got + ElementBytes(kWide), [](char b) { return b == 0; });
    ASSERT_EQ(all_zero, zeroed.count(e) > 0) << "element " << e;
    if (!all_zero) {
      ASSERT_EQ(std::memcmp(got, graph.element(e), ElementBytes(kWide)), 0);
    }
  }
  // An element past the end is refused, the file left as it was.
  EXPECT_FALSE(HnswGraph::ZeroSavedElements(path, {kCount}).ok());
  EXPECT_TRUE(HnswGraph::Load(path, options, 0).ok());
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace engram
