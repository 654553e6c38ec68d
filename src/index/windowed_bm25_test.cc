#include "index/windowed_bm25.h"

#include <gtest/gtest.h>

#include <algorithm>

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

}  // namespace
}  // namespace engram
