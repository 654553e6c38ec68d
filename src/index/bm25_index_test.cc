#include "index/bm25_index.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <map>
#include <random>
#include <set>
#include <string>
#include <vector>

namespace engram {
namespace {

using ::testing::IsEmpty;

std::vector<DocId> Docs(const std::vector<ScoredDoc>& results) {
  std::vector<DocId> docs;
  for (const ScoredDoc& r : results) docs.push_back(r.doc);
  return docs;
}

// Reference formula, written out independently of the implementation.
double Idf(double n, double df) { return std::log(1.0 + (n - df + 0.5) / (df + 0.5)); }
double TermScore(double n, double df, double tf, double dl, double avgdl) {
  const double k1 = 1.2;
  const double b = 0.75;
  return Idf(n, df) * tf * (k1 + 1) / (tf + k1 * (1 - b + b * dl / avgdl));
}

// doc0 = a b, doc1 = a a c, doc2 = c. N = 3, avgdl = 2, df(a) = df(c) = 2, df(b) = 1.
class TinyCorpusTest : public ::testing::Test {
 protected:
  void SetUp() override {
    index_.Add(0, {"a", "b"});
    index_.Add(1, {"a", "a", "c"});
    index_.Add(2, {"c"});
  }
  Bm25Index index_;
};

TEST_F(TinyCorpusTest, ExactScoresSingleTerm) {
  // By hand: idf(a) = ln(1.6) = 0.470004; doc1: 2 * 2.2 / (2 + 1.65) * idf = 0.566580;
  // doc0: 1 * 2.2 / (1 + 1.2) * idf = 0.470004.
  std::vector<ScoredDoc> results = index_.Search({"a"}, 10);
  ASSERT_EQ(results.size(), 2u);
  EXPECT_EQ(results[0].doc, 1u);
  EXPECT_NEAR(results[0].score, 0.566580, 1e-5);
  EXPECT_NEAR(results[0].score, TermScore(3, 2, 2, 3, 2), 1e-5);
  EXPECT_EQ(results[1].doc, 0u);
  EXPECT_NEAR(results[1].score, 0.470004, 1e-5);
}

TEST_F(TinyCorpusTest, ExactScoresTwoTerms) {
  std::vector<ScoredDoc> results = index_.Search({"a", "c"}, 10);
  ASSERT_EQ(results.size(), 3u);
  EXPECT_EQ(Docs(results), (std::vector<DocId>{1, 2, 0}));
  EXPECT_NEAR(results[0].score, TermScore(3, 2, 2, 3, 2) + TermScore(3, 2, 1, 3, 2), 1e-5);
  EXPECT_NEAR(results[0].score, 0.956773, 1e-5);
  EXPECT_NEAR(results[1].score, 0.590862, 1e-5);
  EXPECT_NEAR(results[2].score, 0.470004, 1e-5);
}

TEST_F(TinyCorpusTest, DuplicateQueryTermsCountOnce) {
  std::vector<ScoredDoc> once = index_.Search({"a"}, 10);
  std::vector<ScoredDoc> thrice = index_.Search({"a", "a", "a"}, 10);
  ASSERT_EQ(once.size(), thrice.size());
  for (size_t i = 0; i < once.size(); ++i) {
    EXPECT_EQ(once[i].doc, thrice[i].doc);
    EXPECT_FLOAT_EQ(once[i].score, thrice[i].score);
  }
}

TEST_F(TinyCorpusTest, EmptyUnknownAndZeroK) {
  EXPECT_THAT(index_.Search({}, 10), IsEmpty());
  EXPECT_THAT(index_.Search({"zzz"}, 10), IsEmpty());
  EXPECT_THAT(index_.Search({"a"}, 0), IsEmpty());
  EXPECT_EQ(Docs(index_.Search({"zzz", "b"}, 10)), (std::vector<DocId>{0}));
}

TEST_F(TinyCorpusTest, KLargerThanMatchesAndTruncation) {
  EXPECT_EQ(index_.Search({"a", "b", "c"}, 1000).size(), 3u);
  std::vector<ScoredDoc> top1 = index_.Search({"a", "c"}, 1);
  ASSERT_EQ(top1.size(), 1u);
  EXPECT_EQ(top1[0].doc, 1u);
}

TEST_F(TinyCorpusTest, RemovalUpdatesStatsAndResults) {
  EXPECT_EQ(index_.doc_count(), 3u);
  index_.Remove(1);
  EXPECT_FALSE(index_.Contains(1));
  EXPECT_EQ(index_.doc_count(), 2u);
  // Now N = 2, avgdl = 1.5, df(a) = 1: doc0 scores ln(2) * 2.2 / (1 + 1.5) = 0.609977.
  std::vector<ScoredDoc> results = index_.Search({"a"}, 10);
  ASSERT_EQ(results.size(), 1u);
  EXPECT_EQ(results[0].doc, 0u);
  EXPECT_NEAR(results[0].score, TermScore(2, 1, 1, 2, 1.5), 1e-5);
  EXPECT_NEAR(results[0].score, 0.609977, 1e-5);
  index_.Remove(1);   // Absent: no-op.
  index_.Remove(99);  // Never added: no-op.
  EXPECT_EQ(index_.doc_count(), 2u);
}

TEST_F(TinyCorpusTest, ReAddingARemovedIdUsesOnlyTheNewTerms) {
  index_.Remove(1);
  index_.Add(1, {"b"});
  EXPECT_TRUE(index_.Contains(1));
  EXPECT_EQ(Docs(index_.Search({"a"}, 10)), (std::vector<DocId>{0}));
  EXPECT_EQ(index_.Search({"b"}, 10).size(), 2u);
  // Same state as an index built directly.
  Bm25Index fresh;
  fresh.Add(0, {"a", "b"});
  fresh.Add(1, {"b"});
  fresh.Add(2, {"c"});
  for (const auto& query : std::vector<std::vector<std::string>>{{"a"}, {"b"}, {"c"}, {"a", "b"}}) {
    std::vector<ScoredDoc> got = index_.Search(query, 10);
    std::vector<ScoredDoc> want = fresh.Search(query, 10);
    ASSERT_EQ(got.size(), want.size());
    for (size_t i = 0; i < got.size(); ++i) {
      EXPECT_EQ(got[i].doc, want[i].doc);
      EXPECT_FLOAT_EQ(got[i].score, want[i].score);
    }
  }
}

TEST_F(TinyCorpusTest, AddingAPresentIdReplacesIt) {
  index_.Add(0, {"c", "c"});
  EXPECT_EQ(index_.doc_count(), 3u);
  EXPECT_EQ(Docs(index_.Search({"a"}, 10)), (std::vector<DocId>{1}));
  EXPECT_EQ(index_.Search({"c"}, 10).front().doc, 0u);
}

TEST_F(TinyCorpusTest, ContributionsSumToSearchScores) {
  index_.Remove(2);
  index_.Add(3, {"b", "c", "c"});
  std::map<DocId, double> sum;
  std::set<size_t> term_indexes;
  const size_t n = index_.ForEachContribution({"c", "a", "missing", "a"},
                                              [&](size_t t, DocId doc, float contribution) {
                                                EXPECT_GT(contribution, 0.0f);
                                                term_indexes.insert(t);
                                                sum[doc] += contribution;
                                              });
  EXPECT_EQ(n, 2u);  // "a" and "c"; the duplicate and the unknown term do not count
  EXPECT_EQ(term_indexes, (std::set<size_t>{0, 1}));
  EXPECT_EQ(sum.count(2), 0u);  // removed
  const auto results = index_.Search({"c", "a"}, 10);
  ASSERT_EQ(results.size(), sum.size());
  for (const ScoredDoc& r : results) EXPECT_NEAR(sum[r.doc], r.score, 1e-5) << r.doc;
}

TEST(Bm25IndexTest, RarerTermsWeighMore) {
  Bm25Index index;
  // "common" is in every doc, "rare" in one; docs 1 and 2 have the same length.
  index.Add(0, {"common", "x"});
  index.Add(1, {"common", "rare"});
  index.Add(2, {"common", "y"});
  index.Add(3, {"common", "z"});
  std::vector<ScoredDoc> rare = index.Search({"rare"}, 10);
  std::vector<ScoredDoc> common = index.Search({"common"}, 10);
  ASSERT_EQ(rare.size(), 1u);
  ASSERT_EQ(common.size(), 4u);
  EXPECT_GT(rare[0].score, common[0].score);
  EXPECT_EQ(index.Search({"common", "rare"}, 10).front().doc, 1u);
}

TEST(Bm25IndexTest, ShorterDocsWinAtEqualTf) {
  Bm25Index index;
  index.Add(0, {"t", "f1", "f2", "f3", "f4", "f5", "f6", "f7"});
  index.Add(1, {"t", "f1"});
  index.Add(2, {"t", "f1", "f2", "f3"});
  EXPECT_EQ(Docs(index.Search({"t"}, 10)), (std::vector<DocId>{1, 2, 0}));

  Bm25Index flat(Bm25Options{.k1 = 1.2f, .b = 0.0f});  // No length normalisation: a tie.
  flat.Add(0, {"t", "f1", "f2", "f3", "f4", "f5", "f6", "f7"});
  flat.Add(1, {"t", "f1"});
  std::vector<ScoredDoc> tie = flat.Search({"t"}, 10);
  ASSERT_EQ(tie.size(), 2u);
  EXPECT_FLOAT_EQ(tie[0].score, tie[1].score);
  EXPECT_EQ(Docs(tie), (std::vector<DocId>{0, 1}));  // Ties go to the lower id.
}

TEST(Bm25IndexTest, TiesBrokenByLowerDocIdAcrossTopK) {
  Bm25Index index;
  for (DocId d = 0; d < 50; ++d) index.Add(49 - d, {"same", "len"});
  std::vector<ScoredDoc> results = index.Search({"same"}, 5);
  EXPECT_EQ(Docs(results), (std::vector<DocId>{0, 1, 2, 3, 4}));
}

TEST(Bm25IndexTest, FilterIsAppliedInsideRetrieval) {
  Bm25Index index;
  // Doc d has tf = d + 1 for "x" at equal length, so higher ids score higher.
  for (DocId d = 0; d < 20; ++d) {
    std::vector<std::string> terms(static_cast<size_t>(d) + 1, "x");
    terms.resize(20, "pad");
    index.Add(d, terms);
  }
  int calls = 0;
  std::function<bool(DocId)> even_below_10 = [&calls](DocId d) {
    ++calls;
    return d % 2 == 0 && d < 10;
  };
  // The 10 best docs are all rejected, yet the top 3 of the allowed ones come back.
  EXPECT_EQ(Docs(index.Search({"x"}, 3, &even_below_10)), (std::vector<DocId>{8, 6, 4}));
  EXPECT_LE(calls, 20);
  std::function<bool(DocId)> none = [](DocId) { return false; };
  EXPECT_THAT(index.Search({"x"}, 3, &none), IsEmpty());
  std::function<bool(DocId)> all = [](DocId) { return true; };
  EXPECT_EQ(Docs(index.Search({"x"}, 3, &all)), (std::vector<DocId>{19, 18, 17}));
}

TEST(Bm25IndexTest, SparseAndOutOfOrderIds) {
  Bm25Index index;
  index.Add(1000, {"k"});
  index.Add(3, {"k", "k"});
  index.Add(500, {"k", "other"});
  index.Add(4, {"k"});
  std::vector<ScoredDoc> results = index.Search({"k"}, 10);
  ASSERT_EQ(results.size(), 4u);
  EXPECT_EQ(results[0].doc, 3u);
  EXPECT_EQ(index.doc_count(), 4u);
  EXPECT_TRUE(index.Contains(500));
  EXPECT_FALSE(index.Contains(501));
}

TEST(Bm25IndexTest, CompactionKeepsResultsAndReleasesTerms) {
  Bm25Index index;
  for (DocId d = 0; d < 200; ++d) {
    index.Add(d, {"shared", "unique" + std::to_string(d), "group" + std::to_string(d % 4)});
  }
  EXPECT_EQ(index.term_count(), 200u + 4u + 1u);
  const size_t before = index.MemoryBytes();
  for (DocId d = 0; d < 180; ++d) index.Remove(d);
  EXPECT_EQ(index.doc_count(), 20u);
  EXPECT_LT(index.term_count(), 100u);  // Compaction dropped most unique terms.
  EXPECT_LT(index.MemoryBytes(), before);
  std::vector<ScoredDoc> results = index.Search({"shared"}, 100);
  ASSERT_EQ(results.size(), 20u);
  for (const ScoredDoc& r : results) EXPECT_GE(r.doc, 180u);
  EXPECT_EQ(Docs(index.Search({"unique190"}, 10)), (std::vector<DocId>{190}));
  EXPECT_THAT(index.Search({"unique10"}, 10), IsEmpty());
  // Removed ids can be reused after compaction.
  index.Add(5, {"unique5"});
  EXPECT_EQ(Docs(index.Search({"unique5"}, 10)), (std::vector<DocId>{5}));
}

TEST(Bm25IndexTest, ReAddBeforeCompactionPurgesOldPostings) {
  Bm25Index index;
  Bm25Index fresh;
  for (DocId d = 0; d < 100; ++d) {
    std::vector<std::string> terms = {"all", "t" + std::to_string(d % 7)};
    index.Add(d, terms);
    if (d != 7) fresh.Add(d, terms);
  }
  index.Remove(7);  // 2 dead postings of 200: no compaction yet.
  index.Add(7, {"new"});
  fresh.Add(7, {"new"});
  EXPECT_EQ(index.term_count(), fresh.term_count());
  for (const auto& query : std::vector<std::vector<std::string>>{{"all"}, {"t0"}, {"new", "t3"}}) {
    std::vector<ScoredDoc> got = index.Search(query, 200);
    std::vector<ScoredDoc> want = fresh.Search(query, 200);
    ASSERT_EQ(got.size(), want.size());
    for (size_t i = 0; i < got.size(); ++i) {
      EXPECT_EQ(got[i].doc, want[i].doc);
      EXPECT_FLOAT_EQ(got[i].score, want[i].score);
    }
  }
}

TEST(Bm25IndexTest, EmptyDocsAndEmptyIndex) {
  Bm25Index index;
  EXPECT_THAT(index.Search({"a"}, 10), IsEmpty());
  index.Add(0, {});
  EXPECT_TRUE(index.Contains(0));
  EXPECT_EQ(index.doc_count(), 1u);
  EXPECT_THAT(index.Search({"a"}, 10), IsEmpty());
  index.Add(1, {"a"});
  EXPECT_EQ(Docs(index.Search({"a"}, 10)), (std::vector<DocId>{1}));
  EXPECT_GT(index.MemoryBytes(), 0u);
}

TEST(Bm25IndexTest, NestedSearchFromFilter) {
  Bm25Index outer;
  Bm25Index inner;
  for (DocId d = 0; d < 10; ++d) {
    outer.Add(d, {"o"});
    inner.Add(d, {"i", std::to_string(d)});
  }
  // A filter that searches another index on the same thread must not corrupt the outer scratch.
  std::function<bool(DocId)> filter = [&inner](DocId d) {
    return !inner.Search({std::to_string(d)}, 1).empty() && d % 3 == 0;
  };
  EXPECT_EQ(Docs(outer.Search({"o"}, 10, &filter)), (std::vector<DocId>{0, 3, 6, 9}));
  EXPECT_EQ(outer.Search({"o"}, 10).size(), 10u);
}

}  // namespace
}  // namespace engram

namespace engram {
namespace {

TEST(Bm25StatsTest, ASubsetScoresAsIfItWereTheWholeIndex) {
  // Docs 0..5 belong to one user, 6..11 to another who talks about "tea" a lot. Scored with the
  // first user's statistics, that user's docs get exactly the scores of an index holding only
  // them, whatever the other user wrote (and removed docs do not count).
  const std::vector<std::vector<std::string>> mine{{"tea", "green"}, {"coffee"},     {"tea"},
                                                   {"bike", "red"},  {"tea", "tea"}, {"green"}};
  Bm25Index shared, alone;
  std::vector<DocId> scope;
  for (DocId d = 0; d < mine.size(); ++d) {
    shared.Add(d, mine[d]);
    alone.Add(d, mine[d]);
    scope.push_back(d);
  }
  for (DocId d = 6; d < 12; ++d) shared.Add(d, {"tea", "tea", "tea", "long", "text", "here"});
  shared.Add(12, {"tea"});
  shared.Remove(12);
  scope.push_back(12);  // listed but removed: ignored
  scope.push_back(0);   // duplicates count once

  const std::vector<std::string> query{"tea", "green", "bike"};
  const Bm25Stats stats = shared.StatsOver(query, scope);
  EXPECT_EQ(stats.docs, mine.size());
  const std::function<bool(DocId)> in_scope = [](DocId d) { return d < 6; };
  const auto with_stats = shared.Search(query, 10, &in_scope, &stats);
  const auto reference = alone.Search(query, 10);
  ASSERT_EQ(with_stats.size(), reference.size());
  for (size_t i = 0; i < reference.size(); ++i) {
    EXPECT_EQ(with_stats[i].doc, reference[i].doc);
    EXPECT_FLOAT_EQ(with_stats[i].score, reference[i].score);
  }
  // Without them, the other user's "tea" lowers its weight for this user's ranking.
  const auto global = shared.Search(query, 10, &in_scope);
  EXPECT_NE(global.front().score, reference.front().score);

  // Contributions use the same statistics.
  std::map<DocId, float> sums;
  shared.ForEachContribution(
      query, [&](size_t, DocId d, float c) { sums[d] += c; }, &stats);
  for (const ScoredDoc& r : reference) EXPECT_FLOAT_EQ(sums[r.doc], r.score);
}

// KeepTopK takes one of two ways (a heap when k is a small part of the list, a selection and a
// sort otherwise): both give the first k of the fully sorted list, ties broken by DocId, for every
// size around the switch and for k = 0 and k past the end.
TEST(KeepTopKTest, EqualsTheFirstKOfTheSortedList) {
  std::mt19937 rng(7);
  for (size_t n : {0, 1, 15, 16, 17, 100, 160, 1000, 3000}) {
    for (size_t k : {size_t{0}, size_t{1}, n / 16 - (n >= 32 ? 1 : 0), n / 16, n / 16 + 1, n / 3,
                     n - (n > 0 ? 1 : 0), n, n + 5}) {
      std::vector<ScoredDoc> docs;
      for (size_t i = 0; i < n; ++i) {
        // Few distinct scores, so many ties.
        docs.push_back({static_cast<DocId>((i * 7919) % (n + 1)), static_cast<float>(rng() % 37)});
      }
      std::vector<ScoredDoc> want = docs;
      std::sort(want.begin(), want.end(), RanksBefore);
      want.resize(std::min(k, n));
      KeepTopK(docs, k);
      ASSERT_EQ(docs.size(), want.size()) << "n " << n << " k " << k;
      for (size_t i = 0; i < want.size(); ++i) {
        EXPECT_EQ(docs[i].doc, want[i].doc) << "n " << n << " k " << k << " at " << i;
        EXPECT_EQ(docs[i].score, want[i].score);
      }
    }
  }
}

}  // namespace
}  // namespace engram
