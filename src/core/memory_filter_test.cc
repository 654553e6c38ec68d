#include "core/memory_filter.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "common/time_util.h"

#ifdef ENGRAM_HAVE_RAPIDCHECK
#include <rapidcheck.h>
#include <rapidcheck/gtest.h>
#endif

namespace engram {
namespace {

using json = nlohmann::json;

Result<MemoryFilter> Parse(std::string_view text, const FilterLimits& limits = {}) {
  return MemoryFilter::Parse(json::parse(text), "filters", limits);
}

MemoryFilter MustParse(std::string_view text) {
  auto parsed = Parse(text);
  if (!parsed.ok()) {
    ADD_FAILURE() << text << ": " << parsed.status().message();
    return MemoryFilter();
  }
  return std::move(parsed).value();
}

int64_t Micros(std::string_view iso) { return ParseIsoToMicros(iso).value(); }

// Owns what a FilterDoc views.
struct Doc {
  std::string id = "m-1";
  std::string user_id = "alice";
  std::string agent_id;
  std::string run_id;
  std::string app_id;
  std::string session_id;
  std::string text = "The quick brown fox";
  std::vector<std::string> categories;
  int64_t created_at_us = 0;
  int64_t updated_at_us = 0;
  json metadata = json::object();
  bool null_metadata = false;

  FilterDoc View() const {
    return {.id = id,
            .user_id = user_id,
            .agent_id = agent_id,
            .run_id = run_id,
            .app_id = app_id,
            .session_id = session_id,
            .text = text,
            .categories = categories,
            .created_at_us = created_at_us,
            .updated_at_us = updated_at_us,
            .metadata = null_metadata ? nullptr : &metadata};
  }
};

bool Matches(std::string_view filter, const Doc& doc) {
  return MustParse(filter).Matches(doc.View());
}

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
// Id fields

struct MatchCase {
  const char* filter;
  bool expected;
};

void ExpectMatches(const Doc& doc, std::initializer_list<MatchCase> cases) {
  for (const MatchCase& c : cases) {
    EXPECT_EQ(Matches(c.filter, doc), c.expected) << c.filter;
  }
}

TEST(MemoryFilterMatchTest, IdFieldOps) {
  Doc doc;
  doc.user_id = "alice";
  doc.agent_id = "Travel-Bot";
  ExpectMatches(doc, {
                         {R"({"user_id": "alice"})", true},
                         {R"({"user_id": "bob"})", false},
                         {R"({"user_id": {"eq": "alice"}})", true},
                         {R"({"user_id": {"ne": "alice"}})", false},
                         {R"({"user_id": {"ne": "bob"}})", true},
                         {R"({"user_id": {"in": ["bob", "alice"]}})", true},
                         {R"({"user_id": {"in": ["bob", "carol"]}})", false},
                         {R"({"user_id": {"in": []}})", false},
                         {R"({"user_id": {"gt": "alex"}})", true},
                         {R"({"user_id": {"gt": "alice"}})", false},
                         {R"({"user_id": {"gte": "alice"}})", true},
                         {R"({"user_id": {"lt": "alicf"}})", true},
                         {R"({"user_id": {"lt": "alice"}})", false},
                         {R"({"user_id": {"lte": "alice"}})", true},
                         {R"({"user_id": {"contains": "lic"}})", true},
                         {R"({"user_id": {"contains": "LIC"}})", false},
                         {R"({"user_id": {"icontains": "LIC"}})", true},
                         {R"({"agent_id": {"icontains": "travel-BOT"}})", true},
                         {R"({"agent_id": {"contains": "Travel"}})", true},
                         {R"({"user_id": "*"})", true},
                         {R"({"user_id": {"*": true}})", true},
                         {R"({"user_id": {"*": false}})", false},
                         {R"({"user_id": {"eq": "*"}})", false},
                     });
}

TEST(MemoryFilterMatchTest, UnsetIdField) {
  Doc doc;  // run_id and session_id unset
  ExpectMatches(doc, {
                         {R"({"run_id": "r1"})", false},
                         {R"({"run_id": {"ne": "r1"}})", true},
                         {R"({"run_id": {"eq": ""}})", true},
                         {R"({"run_id": {"ne": ""}})", false},
                         {R"({"run_id": {"in": ["r1"]}})", false},
                         {R"({"run_id": {"in": ["r1", ""]}})", true},
                         {R"({"run_id": {"gt": ""}})", false},
                         {R"({"run_id": {"lt": "z"}})", false},
                         {R"({"run_id": {"contains": ""}})", false},
                         {R"({"run_id": {"icontains": ""}})", false},
                         {R"({"run_id": "*"})", false},
                         {R"({"run_id": {"*": false}})", true},
                         {R"({"session_id": {"*": false}})", true},
                     });
  doc.session_id = "s-9";
  ExpectMatches(doc, {{R"({"session_id": "s-9"})", true}, {R"({"session_id": "*"})", true}});
}

TEST(MemoryFilterMatchTest, AppIdIsAnIdField) {
  Doc doc;
  ExpectMatches(doc, {
                         {R"({"app_id": "shop"})", false},
                         {R"({"app_id": {"ne": "shop"}})", true},
                         {R"({"app_id": {"eq": ""}})", true},
                         {R"({"app_id": "*"})", false},
                         {R"({"app_id": {"*": false}})", true},
                     });
  doc.app_id = "Shop-App";
  ExpectMatches(doc, {
                         {R"({"app_id": "Shop-App"})", true},
                         {R"({"app_id": "shop-app"})", false},
                         {R"({"app_id": {"in": ["x", "Shop-App"]}})", true},
                         {R"({"app_id": {"in": ["x"]}})", false},
                         {R"({"app_id": {"icontains": "shop"}})", true},
                         {R"({"app_id": {"contains": "shop"}})", false},
                         {R"({"app_id": {"gt": "Shop"}})", true},
                         {R"({"app_id": "*"})", true},
                         {R"({"user_id": "alice", "app_id": "Shop-App"})", true},
                         {R"({"user_id": "alice", "app_id": "other"})", false},
                     });
}

TEST(MemoryFilterMatchTest, Categories) {
  Doc doc;  // no categories
  ExpectMatches(doc, {
                         {R"({"categories": "food"})", false},
                         {R"({"categories": {"contains": "food"}})", false},
                         {R"({"categories": {"ne": "food"}})", true},
                         {R"({"categories": {"in": ["food"]}})", false},
                         {R"({"categories": "*"})", false},
                         {R"({"categories": {"*": false}})", true},
                     });
  doc.categories = {"food", "travel"};
  ExpectMatches(doc, {
                         {R"({"categories": "food"})", true},
                         {R"({"categories": {"eq": "travel"}})", true},
                         {R"({"categories": {"eq": "foo"}})", false},
                         {R"({"categories": {"eq": "Food"}})", false},
                         {R"({"categories": {"contains": "travel"}})", true},
                         {R"({"categories": {"contains": "trav"}})", false},
                         {R"({"categories": {"ne": "food"}})", false},
                         {R"({"categories": {"ne": "music"}})", true},
                         {R"({"categories": {"in": ["music", "travel"]}})", true},
                         {R"({"categories": {"in": ["music", "health"]}})", false},
                         {R"({"categories": {"in": []}})", false},
                         {R"({"categories": ["health", "food"]})", true},
                         {R"({"categories": ["health"]})", false},
                         {R"({"categories": "*"})", true},
                         {R"({"categories": {"*": true}})", true},
                         {R"({"categories": {"*": false}})", false},
                         {R"({"NOT": {"categories": {"in": ["food"]}}})", false},
                         {R"({"user_id": "alice", "categories": {"contains": "food"}})", true},
                     });
  // Categories never confine a search.
  EXPECT_FALSE(MustParse(R"({"categories": "food"})").ScopeKeys());
}

TEST(MemoryFilterMatchTest, MemoryIds) {
  Doc doc;
  doc.id = "m-42";
  ExpectMatches(doc, {
                         {R"({"memory_ids": "m-42"})", true},
                         {R"({"memory_ids": "m-43"})", false},
                         {R"({"memory_ids": ["m-1", "m-42"]})", true},
                         {R"({"memory_ids": ["m-1", "m-2"]})", false},
                         {R"({"memory_ids": {"in": ["m-42"]}})", true},
                         {R"({"memory_ids": {"eq": "m-42"}})", true},
                         {R"({"memory_ids": []})", false},
                     });
}

TEST(MemoryFilterMatchTest, Keywords) {
  Doc doc;
  doc.text = "The Quick brown fox jumps";
  ExpectMatches(doc, {
                         {R"({"keywords": {"contains": "brown fox"}})", true},
                         {R"({"keywords": {"contains": "quick"}})", false},
                         {R"({"keywords": {"icontains": "quick"}})", true},
                         {R"({"keywords": {"icontains": "QUICK BROWN"}})", true},
                         {R"({"keywords": {"icontains": "slow"}})", false},
                         {R"({"keywords": {"icontains": ""}})", true},
                         {R"({"keywords": {"contains": ""}})", true},
                         // Kelvin sign folds to "k": a non-ASCII needle on ASCII text.
                         {R"({"keywords": {"icontains": "QUIC\u212A"}})", true},
                         {R"({"keywords": {"icontains": "fox jumps é"}})", false},
                     });
  doc.text = "";
  ExpectMatches(doc, {{R"({"keywords": {"icontains": ""}})", true},
                      {R"({"keywords": {"icontains": "a"}})", false}});
}

TEST(MemoryFilterMatchTest, IContainsFoldsUnicode) {
  Doc doc;
  doc.text = "Weiße STRASSE in MÜNCHEN, ΣΊΣΥΦΟΣ";
  ExpectMatches(doc, {
                         {R"({"keywords": {"icontains": "münchen"}})", true},
                         {R"({"keywords": {"icontains": "MÜNCHEN"}})", true},
                         {R"({"keywords": {"icontains": "munchen"}})", false},
                         {R"({"keywords": {"icontains": "straße"}})", true},
                         {R"({"keywords": {"icontains": "WEISSE"}})", true},
                         {R"({"keywords": {"icontains": "σίσυφος"}})", true},
                         {R"({"keywords": {"contains": "münchen"}})", false},
                         {R"({"keywords": {"contains": "MÜNCHEN"}})", true},
                     });
  doc.text = "Café";
  EXPECT_TRUE(Matches(R"({"keywords": {"icontains": "CAFÉ"}})", doc));
  // Invalid UTF-8 in the text is tolerated (read as U+FFFD), not a crash or a false match.
  doc.text = "caf\xC3 au lait";
  EXPECT_TRUE(Matches(R"({"keywords": {"icontains": "AU LAIT"}})", doc));
  EXPECT_FALSE(Matches(R"({"keywords": {"icontains": "café"}})", doc));
}

// ---------------------------------------------------------------------------------------------
// Dates

TEST(MemoryFilterMatchTest, Dates) {
  Doc doc;
  doc.created_at_us = Micros("2024-03-10T12:00:00Z");
  doc.updated_at_us = Micros("2024-05-01T00:00:00Z");
  ExpectMatches(doc,
                {
                    {R"({"created_at": "2024-03-10T12:00:00Z"})", true},
                    {R"({"created_at": "2024-03-10T14:00:00+02:00"})", true},
                    {R"({"created_at": "2024-03-10"})", false},
                    {R"({"created_at": {"ne": "2024-03-10"}})", true},
                    {R"({"created_at": {"gt": "2024-03-10"}})", true},
                    {R"({"created_at": {"gt": "2024-03-10T12:00:00Z"}})", false},
                    {R"({"created_at": {"gte": "2024-03-10T12:00:00Z"}})", true},
                    {R"({"created_at": {"lt": "2024-03-11"}})", true},
                    {R"({"created_at": {"lt": "2024-03-10T12:00:00Z"}})", false},
                    {R"({"created_at": {"lte": "2024-03-10T12:00:00.000Z"}})", true},
                    {R"({"created_at": {"lte": "2024-03-10T11:59:59.999999Z"}})", false},
                    {R"({"created_at": {"gte": "2024-03-01", "lt": "2024-04-01"}})", true},
                    {R"({"created_at": {"gte": "2024-04-01", "lt": "2024-05-01"}})", false},
                    {R"({"created_at": {"in": ["2024-01-01", "2024-03-10T12:00:00Z"]}})", true},
                    {R"({"created_at": {"in": ["2024-01-01"]}})", false},
                    {R"({"updated_at": {"gte": "2024-05-01"}})", true},
                    {R"({"updated_at": {"lt": "2024-05-01"}})", false},
                });
}

// ---------------------------------------------------------------------------------------------
// Metadata

TEST(MemoryFilterMatchTest, MetadataEquality) {
  Doc doc;
  doc.metadata = json::parse(R"({"colour": "red", "n": 3, "f": 2.5, "ok": true, "none": null,
                                 "tags": ["a", "b"], "obj": {"k": 1}, "a.b": "dotted"})");
  ExpectMatches(doc, {
                         {R"({"metadata.colour": "red"})", true},
                         {R"({"metadata.colour": "blue"})", false},
                         {R"({"metadata.n": 3})", true},
                         {R"({"metadata.n": 3.0})", true},
                         {R"({"metadata.n": "3"})", false},
                         {R"({"metadata.f": 2.5})", true},
                         {R"({"metadata.ok": true})", true},
                         {R"({"metadata.ok": 1})", false},
                         {R"({"metadata.none": null})", true},
                         {R"({"metadata.missing": null})", false},
                         {R"({"metadata.tags": ["a", "b"]})", true},
                         {R"({"metadata.tags": ["b", "a"]})", false},
                         {R"({"metadata.obj": {"eq": {"k": 1}}})", true},
                         {R"({"metadata.a.b": "dotted"})", true},
                         {R"({"metadata.colour": {"ne": "red"}})", false},
                         {R"({"metadata.colour": {"ne": "blue"}})", true},
                         {R"({"metadata.missing": {"ne": "x"}})", true},
                         {R"({"metadata.missing": "x"})", false},
                         {R"({"metadata.colour": {"in": ["blue", "red"]}})", true},
                         {R"({"metadata.n": {"in": ["3", 3.0]}})", true},
                         {R"({"metadata.n": {"in": ["3", 4]}})", false},
                         {R"({"metadata.colour": {"in": [1, true]}})", false},
                         {R"({"metadata.none": {"in": [null]}})", true},
                         {R"({"metadata.missing": {"in": [null]}})", false},
                         {R"({"metadata.colour": "*"})", true},
                         {R"({"metadata.none": "*"})", true},
                         {R"({"metadata.missing": "*"})", false},
                         {R"({"metadata.missing": {"*": false}})", true},
                         {R"({"metadata.colour": {"*": false}})", false},
                     });
}

TEST(MemoryFilterMatchTest, MetadataComparisonsCompareLikeWithLike) {
  Doc doc;
  doc.metadata = json::parse(R"({"n": 3, "big": 18446744073709551615, "neg": -2, "f": 0.5,
                                 "s": "m", "b": true})");
  ExpectMatches(doc, {
                         {R"({"metadata.n": {"gt": 2}})", true},
                         {R"({"metadata.n": {"gt": 3}})", false},
                         {R"({"metadata.n": {"gte": 3.0}})", true},
                         {R"({"metadata.n": {"lt": 3.5}})", true},
                         {R"({"metadata.n": {"lte": 2.9}})", false},
                         {R"({"metadata.neg": {"lt": 0}})", true},
                         {R"({"metadata.big": {"gt": 1}})", true},
                         {R"({"metadata.f": {"gt": 0, "lt": 1}})", true},
                         {R"({"metadata.s": {"gt": "a"}})", true},
                         {R"({"metadata.s": {"gte": "m"}})", true},
                         {R"({"metadata.s": {"lt": "m"}})", false},
                         {R"({"metadata.s": {"lte": "z"}})", true},
                         // Type mismatches are false, whichever way round.
                         {R"({"metadata.n": {"gt": "1"}})", false},
                         {R"({"metadata.n": {"lt": "9"}})", false},
                         {R"({"metadata.s": {"gt": 1}})", false},
                         {R"({"metadata.s": {"lt": 1}})", false},
                         {R"({"metadata.b": {"gt": 0}})", false},
                         {R"({"metadata.missing": {"lt": 10}})", false},
                     });
}

TEST(MemoryFilterMatchTest, MetadataContains) {
  Doc doc;
  doc.metadata = json::parse(R"({"title": "Team Meeting notes", "n": 12, "tags": ["meeting"]})");
  ExpectMatches(doc, {
                         {R"({"metadata.title": {"contains": "Meeting"}})", true},
                         {R"({"metadata.title": {"contains": "meeting"}})", false},
                         {R"({"metadata.title": {"icontains": "MEETING"}})", true},
                         {R"({"metadata.n": {"contains": "1"}})", false},
                         {R"({"metadata.tags": {"contains": "meeting"}})", false},
                         {R"({"metadata.missing": {"icontains": ""}})", false},
                     });
}

TEST(MemoryFilterMatchTest, MissingOrNonObjectMetadataIsEmpty) {
  Doc doc;
  doc.null_metadata = true;
  ExpectMatches(doc, {{R"({"metadata.k": "v"})", false},
                      {R"({"metadata.k": {"ne": "v"}})", true},
                      {R"({"metadata.k": {"*": false}})", true}});
  doc.null_metadata = false;
  doc.metadata = json::array({"k"});
  ExpectMatches(doc, {{R"({"metadata.k": "*"})", false}, {R"({"metadata.k": {"ne": 1}})", true}});
}

// ---------------------------------------------------------------------------------------------
// Logic

TEST(MemoryFilterMatchTest, AndOrNotNest) {
  Doc doc;
  doc.user_id = "alice";
  doc.agent_id = "bot";
  doc.metadata = json::parse(R"({"kind": "note", "n": 5})");
  ExpectMatches(doc, {
                         {R"({"AND": [{"user_id": "alice"}, {"agent_id": "bot"}]})", true},
                         {R"({"AND": [{"user_id": "alice"}, {"agent_id": "other"}]})", false},
                         {R"({"OR": [{"user_id": "bob"}, {"agent_id": "bot"}]})", true},
                         {R"({"OR": [{"user_id": "bob"}, {"agent_id": "other"}]})", false},
                         {R"({"NOT": {"user_id": "bob"}})", true},
                         {R"({"NOT": {"user_id": "alice"}})", false},
                         {R"({"NOT": {"NOT": {"user_id": "alice"}}})", true},
                         // mem0's implicit AND of several fields in one object.
                         {R"({"user_id": "alice", "agent_id": "bot"})", true},
                         {R"({"user_id": "alice", "agent_id": "other"})", false},
                         {R"({"AND": [{"user_id": "alice"},
                                      {"OR": [{"metadata.kind": "todo"},
                                              {"AND": [{"metadata.n": {"gte": 5}},
                                                       {"NOT": {"metadata.kind": "draft"}}]}]}]})",
                          true},
                         {R"({"AND": [{"user_id": "alice"},
                                      {"OR": [{"metadata.kind": "todo"},
                                              {"AND": [{"metadata.n": {"gt": 5}},
                                                       {"NOT": {"metadata.kind": "draft"}}]}]}]})",
                          false},
                         {R"({"NOT": {"OR": [{"user_id": "bob"}, {"user_id": "carol"}]}})", true},
                     });
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

// ---------------------------------------------------------------------------------------------
// Properties: the logic is compositional, and ScopeKeys is sound.

#ifdef ENGRAM_HAVE_RAPIDCHECK

const char* const kIds[] = {"", "a", "b", "c"};
const char* const kDates[] = {"2024-01-01", "2024-01-02T12:00:00Z", "2024-02-01"};
const char* const kWords[] = {"apple", "Äpfel", "PIE", "straße"};

std::string PickId() { return kIds[*rc::gen::inRange(0, 4)]; }
const char* PickField() {
  static const char* const kFieldNames[] = {"user_id", "agent_id", "run_id"};
  return kFieldNames[*rc::gen::inRange(0, 3)];
}

json RandomLeaf() {
  switch (*rc::gen::inRange(0, 8)) {
    case 0:
      return {{PickField(), PickId()}};
    case 1: {
      json values = json::array();
      const int n = *rc::gen::inRange(0, 3);
      for (int i = 0; i < n; ++i) values.push_back(PickId());
      return {{PickField(), {{"in", values}}}};
    }
    case 2: {
      static const char* const kOps[] = {"ne", "gt", "lte", "contains", "icontains"};
      return {{PickField(), {{kOps[*rc::gen::inRange(0, 5)], PickId()}}}};
    }
    case 3:
      return {{PickField(), {{"*", *rc::gen::arbitrary<bool>()}}}};
    case 4: {
      static const char* const kOps[] = {"eq", "ne", "gt", "gte", "lt", "lte"};
      return {{"created_at", {{kOps[*rc::gen::inRange(0, 6)], kDates[*rc::gen::inRange(0, 3)]}}}};
    }
    case 5: {
      static const char* const kOps[] = {"eq", "ne", "gt", "lt"};
      json operand = *rc::gen::arbitrary<bool>()
                         ? json(*rc::gen::inRange(0, 4))
                         : json(std::string(1, 'a' + *rc::gen::inRange(0, 3)));
      return {{"metadata.k", {{kOps[*rc::gen::inRange(0, 4)], operand}}}};
    }
    case 6:
      return {{"keywords", {{"icontains", kWords[*rc::gen::inRange(0, 4)]}}}};
    default:
      return {{"metadata.k", "*"}};
  }
}

json RandomFilter(int depth) {
  if (depth == 0 || *rc::gen::inRange(0, 3) == 0) return RandomLeaf();
  switch (*rc::gen::inRange(0, 3)) {
    case 0:
      return {{"NOT", RandomFilter(depth - 1)}};
    default: {
      json children = json::array();
      const int n = *rc::gen::inRange(1, 4);
      for (int i = 0; i < n; ++i) children.push_back(RandomFilter(depth - 1));
      return {{*rc::gen::arbitrary<bool>() ? "AND" : "OR", children}};
    }
  }
}

Doc RandomDoc() {
  Doc doc;
  doc.user_id = PickId();
  doc.agent_id = PickId();
  doc.run_id = PickId();
  doc.text = std::string(kWords[*rc::gen::inRange(0, 4)]) + " " + kWords[*rc::gen::inRange(0, 4)];
  doc.created_at_us = Micros(kDates[*rc::gen::inRange(0, 3)]) + *rc::gen::inRange(-1, 2);
  switch (*rc::gen::inRange(0, 3)) {
    case 0:
      doc.metadata = {{"k", *rc::gen::inRange(0, 4)}};
      break;
    case 1:
      doc.metadata = {{"k", std::string(1, 'a' + *rc::gen::inRange(0, 3))}};
      break;
    default:
      break;
  }
  return doc;
}

MemoryFilter ParseOrFail(const json& j) {
  auto parsed = MemoryFilter::Parse(j, "filters", {});
  RC_ASSERT(parsed.ok());
  return std::move(parsed).value();
}

std::string_view FieldOf(const Doc& doc, const std::string& field) {
  if (field == "user_id") return doc.user_id;
  if (field == "agent_id") return doc.agent_id;
  return doc.run_id;
}

RC_GTEST_PROP(MemoryFilterProperty, LogicIsCompositional, ()) {
  const json f = RandomFilter(3);
  const json g = RandomFilter(3);
  const MemoryFilter pf = ParseOrFail(f);
  const MemoryFilter pg = ParseOrFail(g);
  const MemoryFilter not_f = ParseOrFail({{"NOT", f}});
  const MemoryFilter not_not_f = ParseOrFail({{"NOT", {{"NOT", f}}}});
  const MemoryFilter f_and_g = ParseOrFail({{"AND", {f, g}}});
  const MemoryFilter f_or_g = ParseOrFail({{"OR", {f, g}}});
  for (int i = 0; i < 20; ++i) {
    const Doc doc = RandomDoc();
    const FilterDoc view = doc.View();
    const bool mf = pf.Matches(view);
    const bool mg = pg.Matches(view);
    RC_ASSERT(not_f.Matches(view) == !mf);
    RC_ASSERT(not_not_f.Matches(view) == mf);
    RC_ASSERT(f_and_g.Matches(view) == (mf && mg));
    RC_ASSERT(f_or_g.Matches(view) == (mf || mg));
  }
}

RC_GTEST_PROP(MemoryFilterProperty, ScopeKeysCoverEveryMatch, ()) {
  const json f = RandomFilter(3);
  MemoryFilter filter = ParseOrFail(f);
  const std::string user = kIds[*rc::gen::inRange(1, 4)];
  if (*rc::gen::arbitrary<bool>()) filter.AndEquals("user_id", user);
  const auto keys = filter.ScopeKeys();
  if (!keys) return;
  for (int i = 0; i < 40; ++i) {
    const Doc doc = RandomDoc();
    if (!filter.Matches(doc.View())) continue;
    const bool covered = std::any_of(keys->begin(), keys->end(), [&](const ScopeKey& k) {
      return FieldOf(doc, k.field) == k.value;
    });
    RC_ASSERT(covered);
  }
}

// A memory indexed under one of the scope keys gets the same verdict from MatchesInScope (which
// skips the leaves those keys decide) as from Matches.
RC_GTEST_PROP(MemoryFilterProperty, MatchesInScopeAgreesInsideTheScope, ()) {
  const json f = RandomFilter(3);
  MemoryFilter filter = ParseOrFail(f);
  if (*rc::gen::arbitrary<bool>()) filter.AndEquals("user_id", kIds[*rc::gen::inRange(1, 4)]);
  const auto keys = filter.ScopeKeys();
  if (!keys) return;
  for (int i = 0; i < 40; ++i) {
    const Doc doc = RandomDoc();
    const bool in_scope = std::any_of(keys->begin(), keys->end(), [&](const ScopeKey& k) {
      return !k.value.empty() && FieldOf(doc, k.field) == k.value;
    });
    if (!in_scope) continue;
    RC_ASSERT(filter.MatchesInScope(doc.View(), /*equalities_given=*/false) ==
              filter.Matches(doc.View()));
  }
}

RC_GTEST_PROP(MemoryFilterProperty, AndEqualsConjoins, ()) {
  const json f = RandomFilter(3);
  const MemoryFilter plain = ParseOrFail(f);
  MemoryFilter scoped = ParseOrFail(f);
  const std::string agent = PickId();
  scoped.AndEquals("agent_id", agent);
  for (int i = 0; i < 20; ++i) {
    const Doc doc = RandomDoc();
    RC_ASSERT(scoped.Matches(doc.View()) == (plain.Matches(doc.View()) && doc.agent_id == agent));
  }
}

#endif  // ENGRAM_HAVE_RAPIDCHECK

}  // namespace
}  // namespace engram
