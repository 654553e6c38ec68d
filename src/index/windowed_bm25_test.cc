#include "index/windowed_bm25.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <random>
#include <set>

namespace engram {
namespace {

class WindowedBm25Test : public ::testing::Test {
 protected:
  // Adds a turn to session `group`, in the order of calls.
  DocId AddTurn(const std::vector<std::string>& terms, const std::string& group) {
    const auto slot = static_cast<DocId>(count_++);
    bm25_.Add(slot, terms);
    order_.Insert(slot, group, [](DocId a, DocId b) { return a < b; });
    return slot;
  }
  std::vector<DocId> Search(const std::vector<std::string>& terms, size_t k,
                            const WindowFilter& filter = {}) {
    std::vector<DocId> out;
    for (const auto& s : WindowedBm25(bm25_, order_, count_, terms, k, 0.5f, filter)) {
      out.push_back(s.doc);
    }
    return out;
  }

  Bm25Index bm25_;
  TurnOrder order_;
  size_t count_ = 0;
};

TEST_F(WindowedBm25Test, AReplyMatchesThroughTheQuestionBeforeIt) {
  const DocId question = AddTurn({"visit", "lisbon"}, "s");
  const DocId reply = AddTurn({"definit", "friend"}, "s");
  const DocId other = AddTurn({"shoe"}, "t");
  const auto hits = Search({"lisbon"}, 10);
  ASSERT_EQ(hits.size(), 2u);
  EXPECT_EQ(hits[0], question);
  EXPECT_EQ(hits[1], reply);
  EXPECT_EQ(std::count(hits.begin(), hits.end(), other), 0);
}

TEST_F(WindowedBm25Test, ARejectedTurnIsNotReturnedButLendsItsWords) {
  const DocId question = AddTurn({"visit", "lisbon"}, "s");
  const DocId reply = AddTurn({"definit"}, "s");
  const std::function<bool(DocId)> not_question = [&](DocId d) { return d != question; };
  EXPECT_EQ(Search({"lisbon"}, 10, {.admits = &not_question}), std::vector<DocId>{reply});
}

TEST_F(WindowedBm25Test, TurnsOutOfScopeAreIgnored) {
  const DocId a = AddTurn({"lisbon"}, "s");
  const DocId b = AddTurn({"lisbon", "lisbon"}, "t");
  const std::function<bool(DocId)> only_a = [&](DocId d) { return d == a; };
  EXPECT_EQ(Search({"lisbon"}, 10, {.in_scope = &only_a}), std::vector<DocId>{a});
  EXPECT_EQ(Search({"lisbon"}, 10).front(), b);
}

TEST_F(WindowedBm25Test, AFilterNeverEmptiesATruncatedTopK) {
  // Many better turns the filter rejects, then one weak turn it admits: with k = 1 the admitted
  // one is still found (the pruning floor is taken among admitted turns).
  std::vector<DocId> strong;
  for (int i = 0; i < 20; ++i)
    strong.push_back(AddTurn({"lisbon", "lisbon", "lisbon"}, "g" + std::to_string(i)));
  const DocId weak = AddTurn({"lisbon", "x", "y", "z", "w", "v"}, "weak");
  const std::function<bool(DocId)> only_weak = [&](DocId d) { return d == weak; };
  EXPECT_EQ(Search({"lisbon"}, 1, {.admits = &only_weak}), std::vector<DocId>{weak});
}

TEST_F(WindowedBm25Test, FilteredRankingMatchesBruteForce) {
  // Random turns in sessions of 7 over a small vocabulary (many matches, so the pruning has work
  // to do), two "users" (even / odd sessions) and a filter admitting a third of one user's turns:
  // the top-k must be the brute-force top-k of the window formula over the admitted turns, with
  // the scope's statistics, neighbours lending their words whether admitted or not.
  std::mt19937 rng(7);
  std::uniform_int_distribution<int> word(0, 30), length(1, 10);
  std::vector<std::vector<std::string>> docs;
  for (int i = 0; i < 700; ++i) {
    std::vector<std::string> terms;
    for (int w = length(rng); w > 0; --w)
      terms.push_back("w" + std::to_string(word(rng) * word(rng) / 30));
    docs.push_back(terms);
    AddTurn(terms, "s" + std::to_string(i / 7));
  }
  auto session = [](DocId d) { return static_cast<int>(d) / 7; };
  std::vector<DocId> scope;
  for (DocId d = 0; d < docs.size(); ++d) {
    if (session(d) % 2 == 0) scope.push_back(d);
  }
  const std::function<bool(DocId)> in_scope = [&](DocId d) { return session(d) % 2 == 0; };
  std::set<DocId> asked;
  const std::function<bool(DocId)> admits = [&](DocId d) {
    asked.insert(d);
    return in_scope(d) && d % 3 == 0;
  };
  for (int q = 0; q < 30; ++q) {
    std::vector<std::string> query;
    for (int w = 1 + q % 4; w > 0; --w)
      query.push_back("w" + std::to_string(word(rng) * word(rng) / 30));
    const Bm25Stats stats = bm25_.StatsOver(query, scope);
    std::map<DocId, std::map<size_t, float>> own;
    bm25_.ForEachContribution(
        query, [&](size_t t, DocId d, float c) { own[d][t] = c; }, &stats);
    std::vector<float> expected;
    for (DocId d = 0; d < docs.size(); ++d) {
      if (!in_scope(d) || d % 3 != 0) continue;
      std::map<size_t, float> best = own.count(d) ? own[d] : std::map<size_t, float>{};
      for (long n : {static_cast<long>(d) - 1, static_cast<long>(d) + 1}) {
        if (n < 0 || n >= static_cast<long>(docs.size()) ||
            session(static_cast<DocId>(n)) != session(d))
          continue;
        if (!own.count(static_cast<DocId>(n))) continue;
        for (const auto& [t, c] : own[static_cast<DocId>(n)]) best[t] = std::max(best[t], 0.5f * c);
      }
      float score = 0;
      for (const auto& [t, c] : best) score += c;
      if (score > 0) expected.push_back(score);
    }
    std::sort(expected.begin(), expected.end(), std::greater<float>());
    const size_t k = 12;
    asked.clear();
    const auto hits =
        WindowedBm25(bm25_, order_, count_, query, k, 0.5f, {&in_scope, &admits}, &stats);
    ASSERT_EQ(hits.size(), std::min(k, expected.size())) << "query " << q;
    for (size_t i = 0; i < hits.size(); ++i) {
      EXPECT_TRUE(in_scope(hits[i].doc) && hits[i].doc % 3 == 0);
      EXPECT_NEAR(hits[i].score, expected[i], 1e-4) << "query " << q << " rank " << i;
    }
    for (DocId d : asked)
      EXPECT_TRUE(in_scope(d)) << "the filter is asked only about turns in scope";
  }
}

}  // namespace
}  // namespace engram
