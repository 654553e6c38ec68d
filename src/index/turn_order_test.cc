#include "index/turn_order.h"

#include <gtest/gtest.h>

#include <map>

namespace engram {
namespace {

TEST(TurnOrderTest, OutOfOrderTurnsAreLinkedInConversationOrder) {
  // Slot -> time; slots arrive 2, 0, 3, 1 but the conversation is 0, 1, 2, 3.
  std::map<DocId, int> time{{0, 10}, {1, 20}, {2, 30}, {3, 40}};
  auto before = [&](DocId a, DocId b) { return time[a] < time[b]; };
  TurnOrder order;
  for (DocId slot : {2u, 0u, 3u, 1u}) order.Insert(slot, "s", before);
  EXPECT_EQ(order.prev(0), TurnOrder::kNone);
  EXPECT_EQ(order.next(0), 1u);
  EXPECT_EQ(order.prev(1), 0u);
  EXPECT_EQ(order.next(1), 2u);
  EXPECT_EQ(order.next(2), 3u);
  EXPECT_EQ(order.next(3), TurnOrder::kNone);
  EXPECT_EQ(order.prev(99), TurnOrder::kNone) << "an unknown slot has no neighbours";
}

TEST(TurnOrderTest, GroupsAreSeparateConversations) {
  auto before = [](DocId a, DocId b) { return a < b; };
  TurnOrder order;
  order.Insert(0, "a", before);
  order.Insert(1, "b", before);
  order.Insert(2, "a", before);
  EXPECT_EQ(order.next(0), 2u);
  EXPECT_EQ(order.prev(2), 0u);
  EXPECT_EQ(order.prev(1), TurnOrder::kNone);
  EXPECT_EQ(order.next(1), TurnOrder::kNone);
  EXPECT_EQ(order.group_count(), 2u);
  EXPECT_GT(order.MemoryBytes(), 0u);
}

TEST(TurnOrderTest, RemoveLinksTheNeighboursAndReinsertMovesATurn) {
  std::map<DocId, int> time{{0, 10}, {1, 20}, {2, 30}};
  auto before = [&](DocId a, DocId b) { return time[a] < time[b]; };
  TurnOrder order;
  for (DocId slot : {0u, 1u, 2u}) order.Insert(slot, "s", before);
  order.Remove(1);
  EXPECT_FALSE(order.contains(1));
  EXPECT_EQ(order.next(0), 2u);
  EXPECT_EQ(order.prev(2), 0u);
  EXPECT_EQ(order.prev(1), TurnOrder::kNone);
  order.Remove(1);  // again: a no-op
  time[1] = 40;     // the turn moved to the end
  order.Insert(1, "s", before);
  EXPECT_EQ(order.next(2), 1u);
  EXPECT_EQ(order.prev(1), 2u);
  order.Remove(0);
  order.Remove(1);
  order.Remove(2);
  EXPECT_EQ(order.group_count(), 0u) << "an empty group is dropped";
}

}  // namespace
}  // namespace engram
