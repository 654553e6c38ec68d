#include "index/entity_catalog.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace engram {
namespace {

// name[alias,alias]:texts for each entity, in the catalog's order.
std::vector<std::string> Summary(const EntityCatalog& catalog) {
  std::vector<std::string> out;
  for (const CatalogEntity& e : catalog.Entities()) {
    std::string s = e.name;
    if (!e.aliases.empty()) {
      s += "[";
      for (size_t i = 0; i < e.aliases.size(); ++i) s += (i ? "," : "") + e.aliases[i];
      s += "]";
    }
    out.push_back(s + ":" + std::to_string(e.texts));
  }
  return out;
}

void Add(EntityCatalog* c, std::string_view text, int64_t time, std::string_view conversation) {
  c->Add(FindEntityMentions(text), time, conversation);
}

using V = std::vector<std::string>;

TEST(EntityCatalogTest, CountsTextsAndTimes) {
  EntityCatalog c;
  Add(&c, "lunch with Melanie and Melanie's dog", 10, "s1");
  Add(&c, "then Melanie went to Boston", 30, "s1");
  Add(&c, "call parse_config first", 5, "");
  const auto entities = c.Entities();
  ASSERT_EQ(entities.size(), 3u);
  EXPECT_EQ(entities[0].name, "Melanie");  // 2 texts, latest 30
  EXPECT_EQ(entities[0].texts, 2u);
  EXPECT_EQ(entities[0].first_seen_us, 10);
  EXPECT_EQ(entities[0].last_seen_us, 30);
  EXPECT_EQ(entities[1].name, "Boston");
  EXPECT_EQ(entities[2].name, "parse_config");
  EXPECT_EQ(entities[2].kind, EntityKind::kIdentifier);
}

TEST(EntityCatalogTest, NamesMostlyOpeningSentencesAreDropped) {
  EntityCatalog c;
  Add(&c, "Thanks! Tom came.", 1, "s");
  Add(&c, "Thanks, that helps", 2, "s");
  Add(&c, "I saw Tom", 3, "s");
  EXPECT_EQ(Summary(c), (V{"Tom:2"}));
  // "The" once inside a sentence (a title's quote) and five times opening one: not a name.
  for (int i = 0; i < 5; ++i) Add(&c, "The tea was good.", 4 + i, "s");
  Add(&c, "we saw \"Summer\" The band", 9, "s");
  EXPECT_EQ(Summary(c), (V{"Tom:2", "Summer:1"}));
}

TEST(EntityCatalogTest, CaseDoesNotSplitANameButDoesAnIdentifier) {
  EntityCatalog c;
  Add(&c, "with YouTube today", 1, "");
  Add(&c, "with Youtube tomorrow", 2, "");
  Add(&c, "with YouTube again", 3, "");
  Add(&c, "call getUserName or GetUserName", 4, "");
  Add(&c, "in the US. Us? the US", 5, "");  // an acronym keeps its case
  EXPECT_EQ(Summary(c), (V{"YouTube[Youtube]:3", "US:1", "GetUserName:1", "getUserName:1"}));
}

TEST(EntityCatalogTest, AliasesMergeWhenOneConversationLinksThem) {
  EntityCatalog c;
  Add(&c, "met Melanie Smith at the gallery", 1, "s1");
  Add(&c, "and Melanie loved it", 2, "s1");
  Add(&c, "then Mel called", 3, "s1");
  Add(&c, "a letter from Smith", 4, "s1");
  EXPECT_EQ(Summary(c), (V{"Melanie Smith[Mel,Melanie,Smith]:4"}));
}

TEST(EntityCatalogTest, APrefixMergesIntoTheNameThatDominates) {
  EntityCatalog c;
  for (int i = 0; i < 8; ++i) Add(&c, "so Melanie painted", i, "s1");
  Add(&c, "hi Mell", 10, "s1");  // a misspelling
  Add(&c, "hi Mel", 11, "s1");
  EXPECT_EQ(Summary(c), (V{"Melanie[Mel]:9", "Mell:1"}));
}

TEST(EntityCatalogTest, AliasesStayApartWithoutALinkOrWhenAmbiguous) {
  {
    EntityCatalog c;  // never in one conversation
    Add(&c, "met Melanie at the gallery", 1, "s1");
    Add(&c, "then Mel called", 2, "s2");
    EXPECT_EQ(Summary(c), (V{"Mel:1", "Melanie:1"}));
  }
  {
    EntityCatalog c;  // two Smiths: "Smith" may be either
    Add(&c, "met Anna Smith and John Smith; Smith waved", 1, "s1");
    EXPECT_EQ(Summary(c), (V{"Anna Smith:1", "John Smith:1", "Smith:1"}));
  }
  {
    EntityCatalog c;  // "Sam" begins two names
    Add(&c, "Sam, Samantha and Samuel met", 1, "s1");
    Add(&c, "later Sam left", 2, "s1");
    EXPECT_EQ(Summary(c), (V{"Sam:2", "Samantha:1", "Samuel:1"}));
  }
  {
    EntityCatalog c;  // an acronym does not abbreviate a longer one
    Add(&c, "the LGBT and LGBTQ groups run Windows OS and OS", 1, "s1");
    EXPECT_EQ(Summary(c), (V{"LGBT:1", "LGBTQ:1", "OS:1", "Windows OS:1"}));
  }
  {
    EntityCatalog c;  // too short to stand for a longer name
    Add(&c, "Al and Alice came, then Al left", 1, "s1");
    EXPECT_EQ(Summary(c), (V{"Al:1", "Alice:1"}));
  }
}

}  // namespace
}  // namespace engram
