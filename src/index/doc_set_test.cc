#include "index/doc_set.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <vector>

namespace engram {
namespace {

// Checks `set` against the sorted, deduplicated `gathered` on every id up to past the largest.
void ExpectSameAsSorted(const DocSet& set, std::vector<DocId> gathered) {
  std::sort(gathered.begin(), gathered.end());
  gathered.erase(std::unique(gathered.begin(), gathered.end()), gathered.end());
  ASSERT_EQ(set.size(), gathered.size());
  for (size_t i = 0; i < gathered.size(); ++i) ASSERT_EQ(set.id(i), gathered[i]);
  // Every id up to past the largest member (within DocId's range), and the largest ids.
  std::vector<DocId> probes = {UINT32_MAX, UINT32_MAX - 1};
  const uint64_t end =
      gathered.empty() ? 70 : std::min<uint64_t>(gathered.back() + 130ull, 1u << 21);
  for (uint64_t d = 0; d < end; ++d) probes.push_back(static_cast<DocId>(d));
  for (const DocId d : gathered) {
    if (d >= end) probes.push_back(d);
  }
  for (const DocId d : probes) {
    const auto at = std::lower_bound(gathered.begin(), gathered.end(), d);
    ASSERT_EQ(set.rank(d), static_cast<size_t>(at - gathered.begin())) << d;
    ASSERT_EQ(set.contains(d), at != gathered.end() && *at == d) << d;
  }
}

TEST(DocSetTest, EmptySetHoldsNothing) {
  DocSet set;
  set.Seal();
  ExpectSameAsSorted(set, {});
}

TEST(DocSetTest, DenseAndSparseSetsAnswerAsASortedList) {
  std::mt19937 rng(11);
  // Dense: members drawn from a small range (the bitmap); sparse: a few members spread over a
  // large one (the sorted list); with repeats, word edges (63, 64) and id 0 in both.
  for (const DocId range : {64u, 200u, 10000u, 1000000u}) {
    for (const size_t count : {1u, 3u, 40u, 2000u}) {
      std::vector<DocId> gathered = {0, 63, 64, range - 1};
      for (size_t i = 0; i < count; ++i) gathered.push_back(static_cast<DocId>(rng() % range));
      for (size_t i = 0; i < count / 2; ++i) gathered.push_back(gathered[rng() % gathered.size()]);
      DocSet set;
      std::vector<ScoredDoc> list;
      for (size_t i = 0; i < gathered.size(); ++i) {
        if (i % 2 == 0)
          set.Add(gathered[i]);
        else
          list.push_back({gathered[i], 0.5f});
      }
      set.Add(list);
      set.Seal();
      SCOPED_TRACE(testing::Message() << "range " << range << " count " << count);
      ExpectSameAsSorted(set, gathered);
    }
  }
}

TEST(DocSetTest, IdsAtTheTopOfTheRange) {
  DocSet set;
  set.Add(UINT32_MAX);
  set.Add(3);
  set.Add(UINT32_MAX - 64);
  set.Seal();
  ExpectSameAsSorted(set, {3, UINT32_MAX - 64, UINT32_MAX});
}

TEST(DocSetTest, SealingAgainMovesBetweenBitmapAndList) {
  DocSet set;
  for (DocId d = 0; d < 100; ++d) set.Add(d);
  set.Seal();  // dense: the bitmap
  set.Add(5000000);
  set.Seal();  // 78,126 words for 101 members: the sorted list
  std::vector<DocId> all;
  for (DocId d = 0; d < 100; ++d) all.push_back(d);
  all.push_back(5000000);
  ExpectSameAsSorted(set, all);
  for (DocId d = 100; d < 6000; ++d) set.Add(d);
  set.Seal();  // 6,001 members over 78,126 words: the bitmap again
  for (DocId d = 100; d < 6000; ++d) all.push_back(d);
  ExpectSameAsSorted(set, all);
}

TEST(DocSetTest, SealingAgainGathersMore) {
  DocSet set;
  set.Add(5);
  set.Seal();
  set.Add(700);
  set.Add(5);
  set.Seal();
  ExpectSameAsSorted(set, {5, 700});
}

}  // namespace
}  // namespace engram
