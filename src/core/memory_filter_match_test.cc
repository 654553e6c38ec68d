// MemoryFilter::Matches, field by field: id fields, categories, memory ids, keywords, dates,
// metadata, and the AND / OR / NOT logic.
#include <gtest/gtest.h>

#include <initializer_list>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "core/memory_filter.h"
#include "core/memory_filter_test_support.h"

namespace engram {
namespace {

using json = nlohmann::json;
using testing::Doc;
using testing::Micros;
using testing::MustParse;

bool Matches(std::string_view filter, const Doc& doc) {
  return MustParse(filter).Matches(doc.View());
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

}  // namespace
}  // namespace engram
