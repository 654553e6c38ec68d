#include "index/hybrid_index.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <random>

#include "index/test_vectors.h"

namespace engram {
namespace {

constexpr int kDim = 8;

HybridIndexOptions Options(bool reuse = false) {
  HybridIndexOptions o;
  o.vectors.dim = kDim;
  o.vector_model = "m";
  o.reuse_slots = reuse;
  return o;
}

std::vector<float> Axis(int i) {
  std::vector<float> v(kDim, 0.0f);
  v[static_cast<size_t>(i)] = 1.0f;
  return v;
}

HybridDoc Doc(const std::vector<std::string>& terms, const std::vector<float>& vector = {},
              std::optional<int64_t> seq = std::nullopt, std::string_view model = "m") {
  HybridDoc d;
  d.terms = &terms;
  d.vector = vector;
  d.vector_model = model;
  d.seq = seq;
  return d;
}

std::vector<DocId> Slots(const HybridHits& hits) {
  std::vector<DocId> out;
  for (const auto& s : hits.ranked) out.push_back(s.doc);
  return out;
}

TEST(HybridIndexTest, UpsertKeepsTheSlotAndRemoveFreesTheKey) {
  HybridIndex index(Options());
  const std::vector<std::string> a{"alpha"}, b{"beta"};
  bool inserted = false;
  const DocId first = index.Upsert("x", Doc(a), MissingVector::kClear, &inserted);
  EXPECT_TRUE(inserted);
  const DocId again = index.Upsert("x", Doc(b), MissingVector::kClear, &inserted);
  EXPECT_FALSE(inserted);
  EXPECT_EQ(first, again);
  EXPECT_EQ(index.size(), 1u);

  HybridQuery q;
  q.terms = &a;
  EXPECT_TRUE(index.Search(q).ranked.empty()) << "the replaced text must not be found";
  q.terms = &b;
  EXPECT_EQ(Slots(index.Search(q)), std::vector<DocId>{first});

  EXPECT_EQ(index.Remove("x"), first);
  EXPECT_FALSE(index.Find("x"));
  EXPECT_FALSE(index.live(first));
  EXPECT_EQ(index.size(), 0u);
  EXPECT_TRUE(index.Search(q).ranked.empty());
  EXPECT_FALSE(index.Remove("x"));
}

// The relevance floor keeps what shares a query term or is close enough in meaning, in the order
// fusion gave it, and drops the rest; without it every document with a vector comes back.
TEST(HybridIndexTest, RelevanceFloorKeepsOnlyResultsWithEvidence) {
  HybridIndex index(Options());
  const std::vector<std::string> id_term{"zircon_parser_v9"}, other{"lunch"}, none{};
  std::vector<float> near = Axis(0), halfway = Axis(0), far = Axis(1);
  halfway[0] = halfway[1] = 0.70710678f;  // cosine 0.707 with Axis(0)
  const DocId with_term = index.Add(Doc(id_term, far));
  const DocId close = index.Add(Doc(other, near));
  const DocId middling = index.Add(Doc(other, halfway));
  const DocId unrelated = index.Add(Doc(none, far));
  const std::vector<float> query_vector = Axis(0);
  HybridQuery q;
  q.terms = &id_term;
  q.vector = query_vector;
  q.k = 10;
  const std::vector<DocId> all = Slots(index.Search(q));
  EXPECT_EQ(all.size(), 4u);
  q.relevance_floor = 0.8f;
  const std::vector<DocId> kept = Slots(index.Search(q));
  std::vector<DocId> expected;
  for (DocId d : all) {
    if (d == with_term || d == close) expected.push_back(d);
  }
  EXPECT_EQ(kept, expected) << "the term's document and the close one, in fused order";
  q.relevance_floor = 0.5f;
  EXPECT_EQ(Slots(index.Search(q)).size(), 3u);
  EXPECT_NE(std::find(all.begin(), all.end(), unrelated), all.end());
  EXPECT_NE(std::find(all.begin(), all.end(), middling), all.end());
}

TEST(HybridIndexTest, SlotsAreReusedOnlyWhenAsked) {
  const std::vector<std::string> t{"word"};
  HybridIndex dense(Options(/*reuse=*/false));
  const DocId a = dense.Add(Doc(t));
  dense.RemoveSlot(a);
  EXPECT_NE(dense.Add(Doc(t)), a);
  EXPECT_EQ(dense.slot_count(), 2u);

  HybridIndex reusing(Options(/*reuse=*/true));
  const DocId b = reusing.Add(Doc(t));
  reusing.RemoveSlot(b);
  EXPECT_EQ(reusing.Add(Doc(t)), b);
  EXPECT_EQ(reusing.slot_count(), 1u);
}

TEST(HybridIndexTest, OnlyVectorsOfTheModelAndDimensionEnter) {
  HybridIndex index(Options());
  const std::vector<std::string> t{"w"};
  const DocId ok = index.Upsert("ok", Doc(t, Axis(0)));
  const DocId other_model = index.Upsert("om", Doc(t, Axis(0), std::nullopt, "other"));
  const DocId short_vector = index.Upsert("sv", Doc(t, std::vector<float>(kDim - 1, 0.1f)));
  EXPECT_TRUE(index.HasVector(ok));
  EXPECT_FALSE(index.HasVector(other_model));
  EXPECT_FALSE(index.HasVector(short_vector));
  EXPECT_FALSE(index.SetVector(other_model, "other", Axis(1)));
  EXPECT_TRUE(index.SetVector(other_model, "m", Axis(1)));
  EXPECT_TRUE(index.HasVector(other_model));
}

TEST(HybridIndexTest, MissingVectorKeepsOrClearsTheOldOne) {
  HybridIndex index(Options());
  const std::vector<std::string> t{"w"};
  const DocId d = index.Upsert("x", Doc(t, Axis(0)));
  index.Upsert("x", Doc(t), MissingVector::kKeep);
  EXPECT_TRUE(index.HasVector(d)) << "a metadata-only update keeps the vector";
  index.Upsert("x", Doc(t), MissingVector::kClear);
  EXPECT_FALSE(index.HasVector(d)) << "a new text without a vector drops the old one";
}

TEST(HybridIndexTest, SeqFollowsTheDocument) {
  HybridIndex index(Options());
  const std::vector<std::string> t{"w"};
  const DocId d = index.Upsert("x", Doc(t, {}, 7));
  EXPECT_EQ(index.FindSeq(7), d);
  index.Upsert("x", Doc(t, {}, 9));  // a new row version
  EXPECT_FALSE(index.FindSeq(7));
  EXPECT_EQ(index.FindSeq(9), d);
  index.Remove("x");
  EXPECT_FALSE(index.FindSeq(9));
}

TEST(HybridIndexTest, AmongAndAdmitsConfineBothRetrievers) {
  HybridIndex index(Options());
  const std::vector<std::string> t{"shared"};
  std::vector<DocId> slots;
  for (int i = 0; i < 6; ++i) {
    slots.push_back(index.Upsert("d" + std::to_string(i), Doc(t, Axis(i % kDim))));
  }
  HybridQuery q;
  q.terms = &t;
  const std::vector<float> v = Axis(0);  // closest to d0
  q.vector = v;
  q.k = 10;
  const std::vector<DocId> among{slots[2], slots[3], slots[4]};
  q.among = &among;
  auto hits = Slots(index.Search(q));
  std::sort(hits.begin(), hits.end());
  EXPECT_EQ(hits, among);

  const std::function<bool(DocId)> not_three = [&](DocId d) { return d != slots[3]; };
  q.admits = &not_three;
  hits = Slots(index.Search(q));
  std::sort(hits.begin(), hits.end());
  EXPECT_EQ(hits, (std::vector<DocId>{slots[2], slots[4]}));

  q.among = nullptr;  // admits alone
  hits = Slots(index.Search(q));
  EXPECT_EQ(hits.size(), 5u);
  EXPECT_EQ(std::count(hits.begin(), hits.end(), slots[3]), 0);

  const std::vector<DocId> none;
  q.among = &none;
  EXPECT_TRUE(index.Search(q).ranked.empty());
}

TEST(HybridIndexTest, FusesBothListsAndReportsCosines) {
  HybridIndex index(Options());
  const std::vector<std::string> lexical{"needle"}, other{"hay"};
  const DocId by_word = index.Upsert("word", Doc(lexical, Axis(3)));
  const DocId by_vector = index.Upsert("vector", Doc(other, Axis(0)));
  index.Upsert("neither", Doc(other, Axis(5)));
  HybridQuery q;
  q.terms = &lexical;
  const std::vector<float> v = Axis(0);
  q.vector = v;
  q.k = 3;
  q.keep_cosines = true;
  HybridHits hits = index.Search(q);
  ASSERT_GE(hits.ranked.size(), 2u);
  const auto ranked = Slots(hits);
  EXPECT_NE(std::find(ranked.begin(), ranked.end(), by_word), ranked.end());
  EXPECT_NE(std::find(ranked.begin(), ranked.end(), by_vector), ranked.end());
  ASSERT_TRUE(hits.CosineOf(by_vector));
  EXPECT_NEAR(*hits.CosineOf(by_vector), 1.0f, 0.02f);

  q.use_bm25 = false;  // vectors only: the word match has no pull
  EXPECT_EQ(index.Search(q).ranked.front().doc, by_vector);
  q.use_bm25 = true;
  q.vector = {};  // BM25 only
  EXPECT_EQ(Slots(index.Search(q)), std::vector<DocId>{by_word});
}

TEST(HybridIndexTest, AnExplainedSearchReportsEachResultsParts) {
  HybridIndex index(Options());
  const std::vector<std::string> lexical{"needle"}, other{"hay"};
  const DocId by_word = index.Upsert("word", Doc(lexical, Axis(3)));
  const DocId by_vector = index.Upsert("vector", Doc(other, Axis(0)));
  HybridQuery q;
  q.terms = &lexical;
  const std::vector<float> v = Axis(0);
  q.vector = v;
  q.k = 2;
  EXPECT_TRUE(index.Search(q).parts.empty()) << "parts only when asked";
  q.explain = true;
  const HybridHits hits = index.Search(q);
  ASSERT_EQ(hits.ranked.size(), 2u);
  const FusionParts* word = hits.PartsOf(by_word);
  const FusionParts* vector = hits.PartsOf(by_vector);
  ASSERT_NE(word, nullptr);
  ASSERT_NE(vector, nullptr);
  ASSERT_TRUE(word->lexical.has_value());
  EXPECT_GT(*word->lexical, 0.0f);
  EXPECT_FALSE(vector->lexical.has_value());
  ASSERT_TRUE(vector->vector.has_value());
  EXPECT_NEAR(*vector->vector, 1.0f, 0.02f);
  EXPECT_GT(word->lexical_part, vector->lexical_part);
  EXPECT_GT(vector->vector_part, word->vector_part);
  for (const ScoredDoc& s : hits.ranked) EXPECT_EQ(hits.PartsOf(s.doc)->score, s.score);
}

TEST(HybridIndexTest, ALexicalRankingReplacesBm25) {
  HybridIndex index(Options());
  const std::vector<std::string> t{"w"};
  const DocId a = index.Upsert("a", Doc(t));
  const DocId b = index.Upsert("b", Doc(t));
  const std::vector<ScoredDoc> own{{b, 5.0f}, {a, 1.0f}};
  HybridQuery q;
  q.terms = &t;
  q.lexical = &own;
  q.fusion.vector_weight = 0;
  EXPECT_EQ(Slots(index.Search(q)), (std::vector<DocId>{b, a}));
}

TEST(HybridIndexTest, ChurnMatchesAReferenceModel) {
  // Random upserts and removals against a plain map: every live key is found in its slot, dead
  // slots never come back from a search, and the counts agree.
  std::mt19937 rng(11);
  HybridIndex index(Options(/*reuse=*/true));
  std::map<std::string, std::vector<std::string>> model;
  const std::vector<std::string> vocabulary{"a", "b", "c", "d", "e"};
  for (int step = 0; step < 2000; ++step) {
    const std::string key = "k" + std::to_string(rng() % 50);
    if (rng() % 3 == 0) {
      EXPECT_EQ(index.Remove(key).has_value(), model.erase(key) == 1);
      continue;
    }
    std::vector<std::string> terms{vocabulary[rng() % vocabulary.size()]};
    const auto v = test_vectors::RandomUnit(rng, kDim);
    index.Upsert(key, Doc(terms, v));
    model[key] = terms;
  }
  EXPECT_EQ(index.size(), model.size());
  for (const auto& term : vocabulary) {
    const std::vector<std::string> q_terms{term};
    HybridQuery q;
    q.terms = &q_terms;
    q.k = 100;
    size_t expected = 0;
    for (const auto& [key, terms] : model) expected += terms.front() == term;
    const HybridHits hits = index.Search(q);
    EXPECT_EQ(hits.ranked.size(), expected) << term;
    for (const auto& s : hits.ranked) EXPECT_TRUE(index.live(s.doc));
  }
}

}  // namespace
}  // namespace engram
