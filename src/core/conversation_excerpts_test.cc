#include "core/conversation_excerpts.h"

#include <gtest/gtest.h>

#include <set>
#include <vector>

namespace engram {
namespace {

// Sessions of turns with consecutive slots: {3, 4} is a session of slots 0..2 and one of 3..6.
TurnOrder Sessions(const std::vector<DocId>& sizes) {
  TurnOrder order;
  DocId slot = 0;
  for (size_t s = 0; s < sizes.size(); ++s) {
    for (DocId i = 0; i < sizes[s]; ++i, ++slot) {
      order.Insert(slot, "s" + std::to_string(s), [](DocId a, DocId b) { return a < b; });
    }
  }
  return order;
}

std::vector<ScoredDoc> Ranked(const std::vector<DocId>& docs) {
  std::vector<ScoredDoc> out;
  float score = 1.0f;
  for (DocId d : docs) out.push_back({d, score -= 0.01f});
  return out;
}

std::vector<std::vector<DocId>> Turns(const std::vector<ConversationExcerpt>& excerpts) {
  std::vector<std::vector<DocId>> out;
  for (const auto& e : excerpts) out.push_back(e.turns);
  return out;
}

const auto kTen = [](DocId) -> size_t { return 10; };

// One turn of context on each side, and room for it.
ExcerptOptions OneTurn() {
  ExcerptOptions o;
  o.turns_before = 1;
  o.turns_after = 1;
  o.max_result_bytes = 2048;
  return o;
}

TEST(ConversationExcerptsTest, EachHitComesWithTheTurnsAroundItInOrder) {
  const TurnOrder order = Sessions({10});
  const auto excerpts = AssembleExcerpts(Ranked({5, 1}), 10, order, kTen, OneTurn());
  EXPECT_EQ(Turns(excerpts), (std::vector<std::vector<DocId>>{{4, 5, 6}, {0, 1, 2}}));
  EXPECT_EQ(excerpts[0].turns[excerpts[0].anchor], 5u);
  EXPECT_EQ(excerpts[1].turns[excerpts[1].anchor], 1u);
  EXPECT_GT(excerpts[0].score, excerpts[1].score);
}

TEST(ConversationExcerptsTest, StopsAtTheSessionsEnds) {
  const TurnOrder order = Sessions({3, 3});
  ExcerptOptions wide = OneTurn();
  wide.turns_before = 2;
  wide.turns_after = 2;
  EXPECT_EQ(Turns(AssembleExcerpts(Ranked({2, 3}), 10, order, kTen, wide)),
            (std::vector<std::vector<DocId>>{{0, 1, 2}, {3, 4, 5}}));
}

TEST(ConversationExcerptsTest, AdjacentHitsMergeAndNoTurnIsShownTwice) {
  const TurnOrder order = Sessions({20});
  // 5 shows 4..6; 7 touches it (context 8) and joins it; 6 is shown already; 12 stands alone.
  const auto excerpts = AssembleExcerpts(Ranked({5, 7, 6, 12}), 10, order, kTen, OneTurn());
  EXPECT_EQ(Turns(excerpts), (std::vector<std::vector<DocId>>{{4, 5, 6, 7, 8}, {11, 12, 13}}));
  EXPECT_EQ(excerpts[0].turns[excerpts[0].anchor], 5u);
  // 3 touches the start of that excerpt: it joins it before.
  const auto before = AssembleExcerpts(Ranked({5, 3}), 10, order, kTen, OneTurn());
  EXPECT_EQ(Turns(before), (std::vector<std::vector<DocId>>{{2, 3, 4, 5, 6}}));
  std::set<DocId> seen;
  for (const auto& e :
       AssembleExcerpts(Ranked({5, 7, 6, 12, 4, 13, 14, 2}), 10, order, kTen, OneTurn())) {
    for (DocId t : e.turns) EXPECT_TRUE(seen.insert(t).second) << t;
  }
}

TEST(ConversationExcerptsTest, KeepsWithinKResultsAndTheBudgets) {
  const TurnOrder order = Sessions({50});
  EXPECT_EQ(AssembleExcerpts(Ranked({5, 15, 25, 35, 45}), 3, order, kTen, OneTurn()).size(), 3u);

  ExcerptOptions tight = OneTurn();
  tight.turns_before = 3;
  tight.turns_after = 3;
  tight.max_result_bytes = 35;  // the hit and two turns of context
  const auto small = AssembleExcerpts(Ranked({10}), 10, order, kTen, tight);
  EXPECT_EQ(Turns(small), (std::vector<std::vector<DocId>>{{8, 9, 10}}));

  // A merge that would pass the result budget leaves two excerpts side by side.
  ExcerptOptions one = OneTurn();
  one.max_result_bytes = 30;
  EXPECT_EQ(Turns(AssembleExcerpts(Ranked({5, 8}), 10, order, kTen, one)),
            (std::vector<std::vector<DocId>>{{4, 5, 6}, {7, 8, 9}}));

  // The answer budget stops context, never a matched turn.
  ExcerptOptions answer = OneTurn();
  answer.answer_max_bytes = 45;  // the first excerpt (30) and the next hit (10) leave 5
  EXPECT_EQ(Turns(AssembleExcerpts(Ranked({5, 20, 30}), 10, order, kTen, answer)),
            (std::vector<std::vector<DocId>>{{4, 5, 6}, {20}, {30}}));

  // A long matched turn is shown whole, alone.
  const auto sizes = [](DocId d) -> size_t { return d == 10 ? 5000 : 10; };
  EXPECT_EQ(Turns(AssembleExcerpts(Ranked({10}), 10, order, sizes, OneTurn())),
            (std::vector<std::vector<DocId>>{{10}}));
}

TEST(ConversationExcerptsTest, DocumentsOutsideSessionsStayAlone) {
  TurnOrder order;  // nothing in any session
  EXPECT_EQ(Turns(AssembleExcerpts(Ranked({3, 1}), 10, order, kTen, OneTurn())),
            (std::vector<std::vector<DocId>>{{3}, {1}}));
}

// One turn of context, after a lead of `lead` results.
ExcerptOptions Lead(size_t lead) {
  ExcerptOptions o = OneTurn();
  o.lead_results = lead;
  return o;
}

TEST(ConversationExcerptsTest, TheLeadShowsMatchesAloneAndTheirContextFollows) {
  const TurnOrder order = Sessions({20});
  // 5 and 12 lead alone; then 5's turn before and after, then 12's; then 9 with its context,
  // which touches 12's turn before (11) and joins it there.
  const auto excerpts = AssembleExcerpts(Ranked({5, 12, 9}), 10, order, kTen, Lead(2));
  EXPECT_EQ(Turns(excerpts),
            (std::vector<std::vector<DocId>>{{5}, {12}, {4}, {6}, {8, 9, 10, 11}, {13}}));
  // A context run is named by its own turn, the one beside the lead turn.
  EXPECT_EQ(excerpts[2].turns[excerpts[2].anchor], 4u);
  EXPECT_EQ(excerpts[4].turns[excerpts[4].anchor], 11u);
  std::set<DocId> seen;
  for (size_t i = 0; i < excerpts.size(); ++i) {
    for (DocId t : excerpts[i].turns) EXPECT_TRUE(seen.insert(t).second) << t;
    // A context run scores as the lead result it surrounds, and no result above the one before.
    if (i > 0) {
      EXPECT_LE(excerpts[i].score, excerpts[i - 1].score) << i;
    }
  }
  EXPECT_EQ(excerpts[2].score, excerpts[1].score);
}

TEST(ConversationExcerptsTest, AdjacentLeadMatchesStayApartAndTheLeadStaysDense) {
  const TurnOrder order = Sessions({20});
  // 5 and 6 lead as two results; 5's context stops at 6 and 6's at 5. 3 touches 5's context run
  // {4} and joins it there, not the lead, which shows only matched turns.
  const auto excerpts = AssembleExcerpts(Ranked({5, 6, 12, 3}), 10, order, kTen, Lead(2));
  EXPECT_EQ(Turns(excerpts),
            (std::vector<std::vector<DocId>>{{5}, {6}, {2, 3, 4}, {7}, {11, 12, 13}}));
}

TEST(ConversationExcerptsTest, TheLeadsContextKeepsWithinTheBudgets) {
  const TurnOrder order = Sessions({20});
  ExcerptOptions full = Lead(2);
  full.answer_max_bytes = 25;  // the two lead turns (10 bytes each) and no context run
  EXPECT_EQ(Turns(AssembleExcerpts(Ranked({5, 12}), 10, order, kTen, full)),
            (std::vector<std::vector<DocId>>{{5}, {12}}));
  // A context turn longer than a result may be is not shown; the next one is.
  const auto sized = [](DocId d) -> size_t { return d == 4 ? 5000 : 10; };
  ExcerptOptions small = Lead(1);
  small.max_result_bytes = 100;
  EXPECT_EQ(Turns(AssembleExcerpts(Ranked({5}), 10, order, sized, small)),
            (std::vector<std::vector<DocId>>{{5}, {6}}));
}

TEST(ConversationExcerptsTest, TheLeadKeepsWithinKAndTheSessionsEnds) {
  const TurnOrder order = Sessions({3, 3});
  // 0 has no turn before it; 3 begins the second session. k cuts the context runs.
  EXPECT_EQ(Turns(AssembleExcerpts(Ranked({0, 3}), 3, order, kTen, Lead(2))),
            (std::vector<std::vector<DocId>>{{0}, {3}, {1}}));
  // A lead longer than k is k results.
  EXPECT_EQ(Turns(AssembleExcerpts(Ranked({0, 4, 2}), 2, order, kTen, Lead(5))),
            (std::vector<std::vector<DocId>>{{0}, {4}}));
}

}  // namespace
}  // namespace engram
