#include "index/entity_mentions.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace engram {
namespace {

// "surface" for mid-sentence names, "^surface" for sentence-initial ones, "`surface" for
// identifiers.
std::vector<std::string> Mentions(std::string_view text) {
  std::vector<std::string> out;
  for (const EntityMention& m : FindEntityMentions(text)) {
    std::string prefix = m.kind == EntityKind::kIdentifier ? "`" : (m.sentence_initial ? "^" : "");
    out.push_back(prefix + m.surface);
  }
  return out;
}

using V = std::vector<std::string>;

TEST(EntityMentionsTest, NamesMidSentence) {
  EXPECT_EQ(Mentions("yesterday I met Melanie at the Museum of Modern Art with Tom."),
            (V{"Melanie", "Museum of Modern Art", "Tom"}));
  EXPECT_EQ(Mentions("we flew to Paris, France and then Rome"), (V{"Paris", "France", "Rome"}));
  EXPECT_EQ(Mentions("a trip with Caroline's sister"), (V{"Caroline"}));
  EXPECT_EQ(Mentions("she works at NASA now"), (V{"NASA"}));
  EXPECT_EQ(Mentions("a painting by Leonardo da Vinci"), (V{"Leonardo da Vinci"}));
  EXPECT_EQ(Mentions("shares of Johnson & Johnson"), (V{"Johnson & Johnson"}));
  EXPECT_EQ(Mentions("the Bank of"), (V{"Bank"}));  // a trailing connector is not part of it
  EXPECT_EQ(Mentions("a visit to Zoë and Émile"), (V{"Zoë", "Émile"}));
  EXPECT_EQ(Mentions("talked to “Jean-Luc” today"), (V{"Jean-Luc"}));
}

TEST(EntityMentionsTest, WhatIsNotAName) {
  // The pronoun, the calendar, a title, plain words, numbers.
  EXPECT_EQ(Mentions("so I think I'm going on Monday in March, OK"), V{});
  EXPECT_EQ(Mentions("we met Dr. Smith and Mrs. Jones"), (V{"Smith", "Jones"}));
  EXPECT_EQ(Mentions("it cost 300 dollars and a B12 shot"), V{});
  EXPECT_EQ(Mentions("see you on Fri or Sat at NASA"), (V{"NASA"}));
  EXPECT_EQ(Mentions("we are JUST DOING IT now"), V{});  // capitals only: shouting
  EXPECT_EQ(Mentions(""), V{});
  EXPECT_EQ(Mentions("  ... -- !!"), V{});
}

TEST(EntityMentionsTest, SentenceOpeningWordsAreFlagged) {
  EXPECT_EQ(Mentions("Thanks! Melanie said hi."), (V{"^Thanks", "^Melanie"}));
  // Whole and without the opening word, which may only be capitalised because it opens.
  EXPECT_EQ(Mentions("Yesterday Melanie painted."), (V{"^Yesterday Melanie", "Melanie"}));
  EXPECT_EQ(Mentions("hi\nTom came"), (V{"^Tom"}));
  // A heading's capitals are its style: its words count as opening a sentence.
  EXPECT_EQ(Mentions("Intro.\n## Tips for Staying Healthy:\nsee Dr. Watson"),
            (V{"^Intro", "^Tips", "^Staying Healthy", "^Healthy", "Watson"}));
  EXPECT_EQ(Mentions("**Additional Tips**\nok"), (V{"^Additional Tips", "^Tips"}));
  // Not headings: a sentence, a greeting with its mark, one word.
  EXPECT_EQ(Mentions("Hey Mel!"), (V{"^Hey Mel", "Mel"}));
  // List items, table cells and headings open anew; a heading's colon is not a speaker's.
  EXPECT_EQ(Mentions("see:\n- Paris is big\n| No | Yes |\nTips: rest"),
            (V{"^Paris", "^No", "^Yes", "^Tips"}));
  // A speaker's name before a colon at the start of a line is a name, not a capitalised word.
  EXPECT_EQ(Mentions("Caroline: Hey Mel, how was Boston?"),
            (V{"Caroline", "^Hey Mel", "Mel", "Boston"}));
  // After a title the next word does not open a sentence.
  EXPECT_EQ(Mentions("Dr. Watson agreed."), (V{"Watson"}));
}

TEST(EntityMentionsTest, Identifiers) {
  EXPECT_EQ(Mentions("call glDetachShader before parse_config runs"),
            (V{"`glDetachShader", "`parse_config"}));
  EXPECT_EQ(Mentions("use std::vector or `deque` and then flush()."),
            (V{"`std::vector", "`deque", "`flush()"}));
  // A brand's one case step is not code; written capitalised, it is a name.
  EXPECT_EQ(Mentions("my iPhone and YouTube"), (V{"YouTube"}));
}

}  // namespace
}  // namespace engram
