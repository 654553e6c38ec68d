#include "core/memory_filter.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "core/memory_filter_test_support.h"

namespace engram {
namespace {

using json = nlohmann::json;
using testing::Doc;
using testing::Micros;
using testing::MustParse;
using testing::Parse;

// ---------------------------------------------------------------------------------------------
// Parse errors

struct ErrorCase {
  const char* filter;
  const char* message;  // a fragment of the expected message
};

TEST(MemoryFilterParseTest, RejectsMalformedFiltersNamingThePath) {
  const ErrorCase kCases[] = {
      {R"([])", "filters: expected a condition object, got array"},
      {R"("alice")", "filters: expected a condition object, got string"},
      {R"(null)", "filters: expected a condition object, got null"},
      {R"({"AND": []})",
       "filters.AND: AND takes a non-empty array of conditions, got an empty array"},
      {R"({"OR": {"user_id": "a"}})",
       "filters.OR: OR takes a non-empty array of conditions, got object"},
      {R"({"NOT": [{"user_id": "a"}]})", "filters.NOT: NOT takes one condition object, got array"},
      {R"({"AND": [{"user_id": "a"}], "user_id": "b"})",
       "filters: AND must be the only key of its object (also found: user_id)"},
      {R"({"NOT": {"OR": [{"user_id": "a"}], "AND": [{"user_id": "b"}]}})",
       "filters.NOT: AND must be the only key of its object (also found: OR)"},
      {R"({"AND": [{}]})", "filters.AND[0]: empty condition object"},
      {R"({"AND": [{"user_id": "a"}, 1]})",
       "filters.AND[1]: expected a condition object, got number"},
      {R"({"AND": [{"user_id": "a"}, {"colour": "red"}]})",
       "filters.AND[1].colour: unknown field (allowed: user_id, agent_id, run_id, app_id, "
       "session_id, "
       "created_at, updated_at, memory_ids, keywords, categories, metadata.<key>; or AND, OR, "
       "NOT)"},
      {R"({"categories": {"icontains": "food"}})",
       "filters.categories.icontains: operator not allowed for categories (allowed: eq, ne, in, "
       "contains, *)"},
      {R"({"categories": {"gt": "food"}})", "filters.categories.gt: operator not allowed"},
      {R"({"categories": {"in": ["food", 1]}})",
       "filters.categories.in[1]: expected a string, got number"},
      {R"({"categories": 3})", "filters.categories: expected a string, got number"},
      {R"({"app_id": {"in": "a"}})", "filters.app_id.in: expected an array, got string"},
      {R"({"and": [{"user_id": "a"}]})", "filters.and: unknown field"},
      {R"({"metadata": {"colour": "red"}})", "filters.metadata: unknown field"},
      {R"({"metadata.": "red"})", "filters.metadata.: empty metadata key"},
      {R"({"user_id": {"like": "a"}})",
       "filters.user_id.like: unknown operator (allowed for user_id: eq, ne, in, gt, gte, lt, lte, "
       "contains, icontains, *)"},
      {R"({"user_id": {}})", "filters.user_id: empty operator object"},
      {R"({"user_id": 7})", "filters.user_id: expected a string, got number"},
      {R"({"agent_id": ["a", "b"]})",
       R"(filters.agent_id: expected a string, got array (use {"in": [...]})"},
      {R"({"run_id": {"in": "a"}})", "filters.run_id.in: expected an array, got string"},
      {R"({"session_id": {"in": ["a", 2]}})",
       "filters.session_id.in[1]: expected a string, got number"},
      {R"({"user_id": {"gt": 1}})", "filters.user_id.gt: expected a string, got number"},
      {R"({"user_id": {"contains": null}})",
       "filters.user_id.contains: expected a string, got null"},
      {R"({"user_id": {"*": "yes"}})",
       "filters.user_id.*: user_id * takes true (present) or false (absent), got string"},
      {R"({"memory_ids": {"ne": "m-1"}})",
       "filters.memory_ids.ne: operator not allowed for memory_ids (allowed: eq, in)"},
      {R"({"memory_ids": {"in": ["m-1", 2]}})",
       "filters.memory_ids.in[1]: expected a string, got number"},
      {R"({"memory_ids": "*"})",
       R"(filters.memory_ids: the "*" wildcard is not allowed for memory_ids)"},
      {R"({"keywords": "fox"})",
       "filters.keywords: keywords takes an operator object (allowed: contains, icontains)"},
      {R"({"keywords": {"eq": "fox"}})", "filters.keywords.eq: operator not allowed for keywords"},
      {R"({"keywords": {"contains": ["fox"]}})",
       "filters.keywords.contains: expected a string, got array"},
      {R"({"created_at": "*"})",
       R"(filters.created_at: the "*" wildcard is not allowed for created_at)"},
      {R"({"created_at": {"contains": "2024"}})",
       "filters.created_at.contains: operator not allowed"},
      {R"({"created_at": {"gte": "yesterday"}})",
       R"(filters.created_at.gte: invalid ISO 8601 date "yesterday")"},
      {R"({"created_at": {"gte": 1704067200}})",
       "filters.created_at.gte: expected an ISO 8601 date string, got number"},
      {R"({"updated_at": {"in": ["2024-01-01", "2024-13-01"]}})",
       R"(filters.updated_at.in[1]: invalid ISO 8601 date "2024-13-01")"},
      {R"({"updated_at": "2024-02-30"})", R"(filters.updated_at: invalid ISO 8601 date)"},
      {R"({"metadata.score": {"gt": true}})",
       "filters.metadata.score.gt: expected a number or a string, got boolean"},
      {R"({"metadata.score": {"lte": [1]}})",
       "filters.metadata.score.lte: expected a number or a string, got array"},
      {R"({"metadata.tags": {"contains": 1}})",
       "filters.metadata.tags.contains: expected a string"},
      {R"({"metadata.tags": {"in": 1}})",
       "filters.metadata.tags.in: expected an array, got number"},
      {R"({"metadata.tags": {"*": 1}})", "filters.metadata.tags.*: metadata.tags * takes true"},
      {R"({"metadata.colour": {"red": 1}})",
       "filters.metadata.colour.red: unknown operator (allowed for metadata.colour: eq, ne, in"},
      {R"({"OR": [{"user_id": "a"}, {"NOT": {"user_id": {"eq": "b", "nin": ["c"]}}}]})",
       "filters.OR[1].NOT.user_id.nin: unknown operator"},
  };
  for (const ErrorCase& c : kCases) {
    auto parsed = Parse(c.filter);
    ASSERT_FALSE(parsed.ok()) << c.filter;
    EXPECT_EQ(parsed.status().code(), StatusCode::kInvalidParameter) << c.filter;
    EXPECT_NE(parsed.status().message().find(c.message), std::string::npos)
        << c.filter << "\n  got:      " << parsed.status().message()
        << "\n  expected: " << c.message;
  }
}

TEST(MemoryFilterParseTest, EmptyPathLeavesMessagesUnprefixed) {
  auto parsed = MemoryFilter::Parse(json::array(), "", {});
  ASSERT_FALSE(parsed.ok());
  EXPECT_EQ(parsed.status().message(), "expected a condition object, got array");
  parsed = MemoryFilter::Parse(json::parse(R"({"colour": 1})"), "", {});
  ASSERT_FALSE(parsed.ok());
  EXPECT_TRUE(parsed.status().message().starts_with("colour: unknown field"));
}

TEST(MemoryFilterParseTest, TopLevelEmptyObjectMatchesAll) {
  MemoryFilter f = MustParse("{}");
  EXPECT_TRUE(f.empty());
  EXPECT_TRUE(f.Matches(Doc().View()));
  EXPECT_FALSE(f.ScopeKeys().has_value());
  EXPECT_TRUE(MemoryFilter().empty());
  EXPECT_TRUE(MemoryFilter().Matches(Doc().View()));
  EXPECT_FALSE(MustParse(R"({"user_id": "a"})").empty());
}

// ---------------------------------------------------------------------------------------------
// Limits

std::string NestedNots(int depth) {
  std::string s;
  for (int i = 0; i < depth; ++i) s += R"({"NOT": )";
  s += R"({"user_id": "alice"})";
  s.append(static_cast<size_t>(depth), '}');
  return s;
}

TEST(MemoryFilterLimitsTest, Depth) {
  FilterLimits limits;
  limits.max_depth = 4;
  EXPECT_TRUE(Parse(NestedNots(4), limits).ok());
  auto parsed = Parse(NestedNots(5), limits);
  ASSERT_FALSE(parsed.ok());
  EXPECT_EQ(parsed.status().message(),
            "filters.NOT.NOT.NOT.NOT.NOT: AND / OR / NOT nested deeper than 4 levels");
  // Implicit ANDs (several fields or ops in one object) do not nest.
  EXPECT_TRUE(Parse(R"({"AND": [{"user_id": "a", "created_at": {"gt": "2024-01-01",
                       "lt": "2025-01-01"}}]})",
                    FilterLimits{.max_depth = 1})
                  .ok());
  // The default is deep enough for any hand-written filter, and bounds the recursion.
  EXPECT_TRUE(Parse(NestedNots(16)).ok());
  EXPECT_FALSE(Parse(NestedNots(17)).ok());
  EXPECT_FALSE(Parse(NestedNots(20000)).ok());
}

TEST(MemoryFilterLimitsTest, NodeCount) {
  FilterLimits limits;
  limits.max_nodes = 3;
  // AND + 2 leaves.
  EXPECT_TRUE(Parse(R"({"AND": [{"user_id": "a"}, {"agent_id": "b"}]})", limits).ok());
  auto parsed = Parse(R"({"AND": [{"user_id": "a"}, {"agent_id": "b"}, {"run_id": "c"}]})", limits);
  ASSERT_FALSE(parsed.ok());
  EXPECT_EQ(parsed.status().message(),
            "filters.AND[2].run_id: the filter has more than 3 conditions and operators");
  // An implicit AND is a node too: implicit AND + 3 leaves.
  parsed = Parse(R"({"user_id": "a", "agent_id": "b", "run_id": "c"})", limits);
  ASSERT_FALSE(parsed.ok());
  EXPECT_NE(parsed.status().message().find("more than 3 conditions"), std::string::npos);
  // Every op of an op object counts.
  parsed = Parse(R"({"created_at": {"gt": "2024-01-01", "lt": "2025-01-01", "ne": "2024-06-01"}})",
                 limits);
  ASSERT_FALSE(parsed.ok());
}

TEST(MemoryFilterLimitsTest, InSize) {
  FilterLimits limits;
  limits.max_in_values = 2;
  EXPECT_TRUE(Parse(R"({"user_id": {"in": ["a", "b"]}})", limits).ok());
  for (const char* filter :
       {R"({"user_id": {"in": ["a", "b", "c"]}})", R"({"memory_ids": ["a", "b", "c"]})",
        R"({"created_at": {"in": ["2024-01-01", "2024-01-02", "2024-01-03"]}})",
        R"({"metadata.n": {"in": [1, 2, 3]}})"}) {
    auto parsed = Parse(filter, limits);
    ASSERT_FALSE(parsed.ok()) << filter;
    EXPECT_NE(parsed.status().message().find(": 3 values, more than the limit of 2"),
              std::string::npos)
        << parsed.status().message();
  }
  EXPECT_EQ(Parse(R"({"memory_ids": ["a", "b", "c"]})", limits).status().message(),
            "filters.memory_ids: 3 values, more than the limit of 2");
}

TEST(MemoryFilterLimitsTest, ValueBytes) {
  FilterLimits limits;
  limits.max_value_bytes = 4;
  EXPECT_TRUE(Parse(R"({"user_id": "abcd"})", limits).ok());
  const ErrorCase kCases[] = {
      {R"({"user_id": "abcde"})", "filters.user_id: value is 5 bytes, more than the limit of 4"},
      {R"({"user_id": {"in": ["a", "abcde"]}})", "filters.user_id.in[1]: value is 5 bytes"},
      {R"({"keywords": {"icontains": "abcde"}})", "filters.keywords.icontains: value is 5 bytes"},
      {R"({"metadata.k": "abcde"})", "filters.metadata.k: value is 5 bytes"},
      {R"({"metadata.k": {"eq": [1, 2, 3]}})", "filters.metadata.k.eq: value is 7 bytes"},
      {R"({"metadata.k": {"in": [1, "abcde"]}})", "filters.metadata.k.in[1]: value is 5 bytes"},
      {R"({"created_at": "2024-01-01"})", "filters.created_at: value is 10 bytes"},
  };
  for (const ErrorCase& c : kCases) {
    auto parsed = Parse(c.filter, limits);
    ASSERT_FALSE(parsed.ok()) << c.filter;
    EXPECT_NE(parsed.status().message().find(c.message), std::string::npos)
        << parsed.status().message();
  }
  // Numbers have no byte size to speak of.
  EXPECT_TRUE(Parse(R"({"metadata.k": 123456789})", limits).ok());
}

// ---------------------------------------------------------------------------------------------
// ScopeKeys

std::vector<ScopeKey> Keys(std::initializer_list<std::pair<const char*, const char*>> pairs) {
  std::vector<ScopeKey> keys;
  for (const auto& [field, value] : pairs) keys.push_back({field, value});
  return keys;
}

TEST(MemoryFilterScopeTest, DerivesKeys) {
  struct Case {
    const char* filter;
    std::optional<std::vector<ScopeKey>> keys;
  };
  const Case kCases[] = {
      {R"({"user_id": "alice"})", Keys({{"user_id", "alice"}})},
      {R"({"agent_id": {"eq": "bot"}})", Keys({{"agent_id", "bot"}})},
      {R"({"run_id": {"in": ["r2", "r1", "r2"]}})", Keys({{"run_id", "r1"}, {"run_id", "r2"}})},
      {R"({"user_id": {"in": []}})", Keys({})},
      {R"({"app_id": "shop"})", Keys({{"app_id", "shop"}})},
      {R"({"app_id": {"in": ["b", "a"]}})", Keys({{"app_id", "a"}, {"app_id", "b"}})},
      {R"({"app_id": {"eq": ""}})", std::nullopt},
      {R"({"app_id": {"ne": "shop"}})", std::nullopt},
      {R"({"AND": [{"app_id": "shop"}, {"user_id": {"in": ["a", "b"]}}]})",
       Keys({{"app_id", "shop"}})},
      {R"({"OR": [{"app_id": "shop"}, {"user_id": "a"}]})",
       Keys({{"app_id", "shop"}, {"user_id", "a"}})},
      // Not scopes, or not finite sets.
      {R"({"session_id": "s"})", std::nullopt},
      {R"({"user_id": {"ne": "alice"}})", std::nullopt},
      {R"({"user_id": {"contains": "al"}})", std::nullopt},
      {R"({"user_id": {"gt": "a"}})", std::nullopt},
      {R"({"user_id": "*"})", std::nullopt},
      {R"({"user_id": {"eq": ""}})", std::nullopt},
      {R"({"user_id": {"in": ["a", ""]}})", std::nullopt},
      {R"({"metadata.user_id": "alice"})", std::nullopt},
      {R"({"memory_ids": ["m-1"]})", std::nullopt},
      // AND keeps the smallest constrained set.
      {R"({"AND": [{"user_id": {"in": ["a", "b"]}}, {"agent_id": "bot"}, {"metadata.k": 1}]})",
       Keys({{"agent_id", "bot"}})},
      {R"({"AND": [{"metadata.k": 1}, {"user_id": {"in": ["a", "b"]}}]})",
       Keys({{"user_id", "a"}, {"user_id", "b"}})},
      {R"({"AND": [{"metadata.k": 1}, {"keywords": {"contains": "x"}}]})", std::nullopt},
      {R"({"user_id": "alice", "metadata.k": 1})", Keys({{"user_id", "alice"}})},
      {R"({"user_id": {"eq": "alice", "ne": "bob"}})", Keys({{"user_id", "alice"}})},
      // OR unites only when every branch is constrained.
      {R"({"OR": [{"user_id": "b"}, {"agent_id": "bot"}, {"user_id": {"in": ["a", "b"]}}]})",
       Keys({{"agent_id", "bot"}, {"user_id", "a"}, {"user_id", "b"}})},
      {R"({"OR": [{"user_id": "b"}, {"metadata.k": 1}]})", std::nullopt},
      {R"({"OR": [{"user_id": "b"}, {"AND": [{"metadata.k": 1}, {"run_id": "r"}]}]})",
       Keys({{"run_id", "r"}, {"user_id", "b"}})},
      // NOT never confines.
      {R"({"NOT": {"user_id": "alice"}})", std::nullopt},
      {R"({"NOT": {"NOT": {"user_id": "alice"}}})", std::nullopt},
      {R"({"AND": [{"NOT": {"user_id": "a"}}, {"user_id": "b"}]})", Keys({{"user_id", "b"}})},
      {R"({"OR": [{"NOT": {"user_id": "a"}}, {"user_id": "b"}]})", std::nullopt},
  };
  for (const Case& c : kCases) {
    EXPECT_EQ(MustParse(c.filter).ScopeKeys(), c.keys) << c.filter;
  }
}

// ---------------------------------------------------------------------------------------------
// AndEquals

TEST(MemoryFilterAndEqualsTest, OnEmptyFilter) {
  MemoryFilter f;
  f.AndEquals("user_id", "alice");
  EXPECT_FALSE(f.empty());
  Doc doc;
  EXPECT_TRUE(f.Matches(doc.View()));
  doc.user_id = "bob";
  EXPECT_FALSE(f.Matches(doc.View()));
  EXPECT_EQ(f.ScopeKeys(), Keys({{"user_id", "alice"}}));
}

TEST(MemoryFilterAndEqualsTest, TakesAppId) {
  MemoryFilter f;
  f.AndEquals("app_id", "shop");
  f.AndEquals("user_id", "alice");
  Doc doc;
  EXPECT_FALSE(f.Matches(doc.View()));
  doc.app_id = "shop";
  EXPECT_TRUE(f.Matches(doc.View()));
  EXPECT_TRUE(f.MatchesInScope(doc.View(), /*equalities_given=*/false));
  EXPECT_EQ(f.ScopeKeys(), Keys({{"app_id", "shop"}}));
}

TEST(MemoryFilterAndEqualsTest, ConjoinsWithAnyRoot) {
  for (const char* filter :
       {R"({"metadata.k": 1})", R"({"OR": [{"metadata.k": 1}, {"agent_id": "x"}]})",
        R"({"AND": [{"metadata.k": {"lte": 1}}]})", R"({"NOT": {"metadata.k": 2}})"}) {
    MemoryFilter f = MustParse(filter);
    f.AndEquals("user_id", "alice");
    f.AndEquals("run_id", "r1");
    Doc doc;
    doc.run_id = "r1";
    doc.metadata = {{"k", 1}};
    EXPECT_TRUE(f.Matches(doc.View())) << filter;
    doc.user_id = "bob";
    EXPECT_FALSE(f.Matches(doc.View())) << filter;
    doc.user_id = "alice";
    doc.run_id = "r2";
    EXPECT_FALSE(f.Matches(doc.View())) << filter;
    doc.run_id = "r1";
    doc.metadata = {{"k", 2}};
    EXPECT_FALSE(f.Matches(doc.View())) << filter;
    // Both equalities confine; the first smallest set wins.
    EXPECT_EQ(f.ScopeKeys(), Keys({{"user_id", "alice"}})) << filter;
  }
}

TEST(MemoryFilterAndEqualsTest, NarrowsAnOrScope) {
  MemoryFilter f = MustParse(R"({"OR": [{"user_id": "a"}, {"user_id": "b"}]})");
  f.AndEquals("agent_id", "bot");
  EXPECT_EQ(f.ScopeKeys(), Keys({{"agent_id", "bot"}}));
  f = MustParse(R"({"user_id": {"in": ["a", "b"]}})");
  f.AndEquals("session_id", "s");  // session_id is not a scope: the user_id keys stay
  EXPECT_EQ(f.ScopeKeys(), Keys({{"user_id", "a"}, {"user_id", "b"}}));
}

TEST(MemoryFilterScopeTest, MatchesInScopeSkipsOnlyTheLeavesTheKeysDecide) {
  // The request's user_id (AndEquals) decides the scope: a doc of another user, which
  // MatchesInScope must never be asked about, shows the leaf is skipped...
  MemoryFilter f = MustParse(R"({"created_at": {"gte": "2024-01-01T00:00:00Z"}})");
  f.AndEquals("user_id", "alice");
  Doc bob;
  bob.user_id = "bob";
  bob.created_at_us = Micros("2024-06-01T00:00:00Z");
  EXPECT_FALSE(f.Matches(bob.View()));
  EXPECT_TRUE(f.MatchesInScope(bob.View(), false));
  // ...while the other conditions are still tested.
  bob.created_at_us = Micros("2023-06-01T00:00:00Z");
  EXPECT_FALSE(f.MatchesInScope(bob.View(), false));

  // With two scope conditions only the one that gives the keys is skipped: agent_id "x" still
  // decides.
  MemoryFilter g =
      MustParse(R"({"AND": [{"agent_id": {"in": ["x", "y"]}}, {"user_id": "alice"}]})");
  ASSERT_EQ(g.ScopeKeys()->size(), 1u);
  Doc alice;
  alice.agent_id = "z";
  EXPECT_FALSE(g.MatchesInScope(alice.View(), false));
  alice.agent_id = "x";
  EXPECT_TRUE(g.MatchesInScope(alice.View(), false));

  // Under an OR nothing is skipped: a scope from an OR of branches does not decide any one leaf.
  MemoryFilter h = MustParse(R"({"OR": [{"user_id": "alice"}, {"user_id": "bob"}]})");
  Doc carol;
  carol.user_id = "carol";
  EXPECT_FALSE(h.MatchesInScope(carol.View(), false));
}

TEST(MemoryFilterTest, MoveKeepsTheTree) {
  MemoryFilter f = MustParse(R"({"user_id": "alice"})");
  MemoryFilter g = std::move(f);
  Doc doc;
  EXPECT_TRUE(g.Matches(doc.View()));
  doc.user_id = "bob";
  EXPECT_FALSE(g.Matches(doc.View()));
  f = std::move(g);
  EXPECT_FALSE(f.Matches(doc.View()));
}

}  // namespace
}  // namespace engram
