// The rule-based extractor's grammar on sentences of everyday talk, one speaker ("Dana") at one
// time (Monday 2026-06-15, 10:00 UTC): every sentence about the speaker becomes facts in the third
// person (the verb agreeing with the new subject, tense kept, relative dates made absolute,
// negation and hedges kept, one fact per predicate), and greetings, thanks, reactions, questions,
// conditions and sentences about the listener become nothing. The sentences were written for
// this table.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "common/time_util.h"
#include "extract/rule_based_extractor.h"

namespace engram {
namespace {

struct GrammarCase {
  std::string sentence;
  std::vector<std::string> facts;
};

const std::vector<GrammarCase>& Cases() {
  static const std::vector<GrammarCase> cases = {
      {"I went to a pottery class on Saturday and made a small blue bowl.",
       {"Dana went to a pottery class on 2026-06-13", "Dana made a small blue bowl"}},
      {"I have been learning Portuguese for two years.",
       {"Dana has been learning Portuguese for two years"}},
      {"My brother Tomas works as a firefighter in Lyon.",
       {"Dana's brother Tomas works as a firefighter in Lyon"}},
      {"I don't eat meat anymore.", {"Dana no longer eats meat"}},
      {"I think I might move to Oslo next spring.",
       {"Dana thinks Dana might move to Oslo next spring"}},
      {"We adopted two cats from the shelter last month.",
       {"Dana and others adopted two cats from the shelter in May 2026"}},
      {"Our garden finally has tomatoes this year.",
       {"Dana's garden finally has tomatoes in 2026"}},
      {"I finished reading a novel about a lighthouse keeper yesterday.",
       {"Dana finished reading a novel about a lighthouse keeper on 2026-06-14"}},
      {"I usually run five kilometres before breakfast.",
       {"Dana usually runs five kilometres before breakfast"}},
      {"I'm allergic to peanuts.", {"Dana is allergic to peanuts"}},
      {"I moved to Berlin last year and work as a nurse.",
       {"Dana moved to Berlin in 2025", "Dana works as a nurse"}},
      {"I can't stand loud concerts.", {"Dana dislikes loud concerts"}},
      {"I really love baking sourdough bread on weekends.",
       {"Dana loves baking sourdough bread on weekends"}},
      {"I've never been to Japan.", {"Dana has never been to Japan"}},
      {"My daughter started kindergarten this week.",
       {"Dana's daughter started kindergarten in the week of 2026-06-15"}},
      {"I was born in a small fishing village in Norway.",
       {"Dana was born in a small fishing village in Norway"}},
      {"I volunteer at the animal rescue every Thursday.",
       {"Dana volunteers at the animal rescue every Thursday"}},
      {"I sold my old motorcycle to a neighbour.",
       {"Dana sold Dana's old motorcycle to a neighbour"}},
      {"I'm training for a half marathon in October.",
       {"Dana is training for a half marathon in October 2026"}},
      {"I lost my wallet at the train station on Friday.",
       {"Dana lost Dana's wallet at the train station on 2026-06-12"}},
      {"My grandmother taught me how to knit scarves.",
       {"Dana's grandmother taught Dana how to knit scarves"}},
      {"I play the cello in a community orchestra.",
       {"Dana plays the cello in a community orchestra"}},
      {"I bought a used kayak for the summer trips.",
       {"Dana bought a used kayak for the summer trips"}},
      {"We celebrated our tenth anniversary with a picnic by the river.",
       {"Dana and others celebrated Dana's tenth anniversary with a picnic by the river"}},
      {"I hate waking up early on Sundays.", {"Dana dislikes waking up early on Sundays"}},
      {"I'm a software engineer at a logistics company.",
       {"Dana works as a software engineer at a logistics company"}},
      {"I painted a mural of sunflowers in the children's hospital.",
       {"Dana painted a mural of sunflowers in the children's hospital"}},
      {"I didn't enjoy the camping trip because it rained constantly.",
       {"Dana did not enjoy the camping trip because it rained constantly"}},
      {"I recently switched to a vegetarian diet for health reasons.",
       {"Dana switched to a vegetarian diet for health reasons"}},
      {"My favorite band is playing a concert in Madrid.",
       {"Dana's favorite band is playing a concert in Madrid"}},
      {"I fixed the leaking kitchen sink myself.",
       {"Dana fixed the leaking kitchen sink themselves"}},
      {"I taught my son to ride a bicycle in the park.",
       {"Dana taught Dana's son to ride a bicycle in the park"}},
      {"I grow basil, mint and rosemary on my balcony.",
       {"Dana grows basil, mint and rosemary on Dana's balcony"}},
      {"I am hoping to open a small bakery someday.",
       {"Dana is hoping to open a small bakery someday"}},
      {"I joined a book club that meets at the library.",
       {"Dana joined a book club that meets at the library"}},
      {"I used to smoke but I quit three years ago.", {"Dana used to smoke"}},
      {"My husband and I are planning a road trip through Scotland.",
       {"Dana's husband and Dana are planning a road trip through Scotland"}},
      {"I got a promotion to senior designer last week.",
       {"Dana got a promotion to senior designer in the week of 2026-06-08"}},
      {"I wrote a short story about a robot learning to paint.",
       {"Dana wrote a short story about a robot learning to paint"}},
      {"I prefer tea over coffee in the mornings.",
       {"Dana prefers tea over coffee in the mornings"}},
      {"Hi there! How are you doing today?", {}},
      {"Thanks so much, that means a lot!", {}},
      {"Wow, that sounds amazing!", {}},
      {"What kind of music do you like?", {}},
      {"You should definitely try the lemon cake.", {}},
      {"That's so sweet of you to say.", {}},
      {"Haha, same here.", {}},
      {"I'm so happy for you!", {}},
      {"Good night, talk to you tomorrow.", {}},
      {"Congratulations on the new job!", {}},
      {"I see what you mean.", {}},
      {"I need to buy groceries.", {}},
      {"I love it.", {}},
      {"I met him at the conference.", {}},
      {"If I had more time I would learn to sail.", {}},
      {"I keep a journal of every hike I take in the mountains.",
       {"Dana keeps a journal of every hike Dana takes in the mountains"}},
      {"I'm reading a biography of a famous chemist these days.",
       {"Dana is reading a biography of a famous chemist"}},
      {"Every summer we rent a cabin near the lake with my cousins.",
       {"Every summer Dana and others rent a cabin near the lake with Dana's cousins"}},
      {"I broke my ankle skiing in the Alps two winters ago.",
       {"Dana broke Dana's ankle skiing in the Alps two winters ago"}},
      {"I'm not a fan of horror movies at all.", {"Dana is not a fan of horror movies at all"}},
      {"I spent the afternoon repairing an old radio with my dad.",
       {"Dana spent the afternoon repairing an old radio with Dana's dad"}},
      {"My sister and I visited an art museum in Vienna yesterday.",
       {"Dana's sister and Dana visited an art museum in Vienna on 2026-06-14"}},
      {"I signed up for a photography workshop next month.",
       {"Dana signed up for a photography workshop in July 2026"}},
      {"I cooked a spicy curry for my roommates on Tuesday.",
       {"Dana cooked a spicy curry for Dana's roommates on 2026-06-09"}},
      // Chat drops the subject; a determiner is not a reference to the conversation.
      {"Took a cooking class in Lisbon last month.",
       {"Dana took a cooking class in Lisbon in May 2026"}},
      {"Just finished knitting a sweater for my niece.",
       {"Dana just finished knitting a sweater for Dana's niece"}},
      {"Been volunteering at the food bank on weekends.",
       {"Dana has been volunteering at the food bank on weekends"}},
      {"I made this lamp from driftwood and old rope.",
       {"Dana made this lamp from driftwood and old rope"}},
      // Words between "I" and its verb are not inflected.
      {"I personally think board games are better than video games.",
       {"Dana personally thinks board games are better than video games"}},
      {"I too love jazz festivals in the summer.", {"Dana too loves jazz festivals in the summer"}},
      // "I and …" is a compound subject, not the end of a clause.
      {"I and my wife went hiking in the Alps last week.",
       {"Dana and Dana's wife went hiking in the Alps in the week of 2026-06-08"}},
      {"I, too, volunteer at the library on Saturdays.",
       {"Dana, too, volunteers at the library on Saturdays"}},
  };
  return cases;
}

TEST(RuleBasedGrammarTest, EverydaySentencesBecomeGrammaticalThirdPersonFacts) {
  ASSERT_GE(Cases().size(), 60u);
  const int64_t monday = *ParseIsoToMicros("2026-06-15T10:00:00Z");
  RuleBasedExtractor extractor;
  size_t silent = 0;
  for (const GrammarCase& c : Cases()) {
    auto facts = extractor.ExtractFacts({{"user", c.sentence, monday, "Dana"}});
    ASSERT_TRUE(facts.ok());
    std::vector<std::string> texts;
    for (const ExtractedFact& f : *facts) texts.push_back(f.text);
    EXPECT_EQ(texts, c.facts) << c.sentence;
    silent += c.facts.empty() ? 1 : 0;
  }
  // Both sides of the rule are exercised: what is kept and what is not.
  EXPECT_GE(silent, 10u);
  EXPECT_GE(Cases().size() - silent, 45u);
}

// Two named people talking (each message a turn, "Caroline" and "Melanie" alternating): what one
// says of the other names them, what they say of anything else is reported as theirs, greetings
// and reactions to the other are dropped, and a speaker's statements over neighbouring turns
// share one memory that cites each turn.
struct TurnsCase {
  std::vector<std::string> turns;
  std::vector<std::string> facts;
};

TEST(RuleBasedGrammarTest, NamedSpeakersAreReportedJoinedAndNamedForYou) {
  const std::vector<TurnsCase> cases = {
      // "you" is whoever spoke just before; the name that only addresses them goes.
      {{"Hi Melanie! Guess what, I ran a charity race for mental health last Saturday.",
        "Wow, Caroline! I'm really impressed by you and your training."},
       {"Caroline ran a charity race for mental health on 2026-06-13",
        "Melanie is really impressed by Caroline and Caroline's training"}},
      // What is not about the speaker is reported; a reaction to the listener is not.
      {{"The transgender stories at the meeting were so inspiring.",
        "Glad you found such a helpful group!"},
       {"Caroline said the transgender stories at the meeting were so inspiring"}},
      // An annotation of what the speaker did is theirs, without "said".
      {{"Here is the bowl from my class. [shares a photo: a blue bowl on a wooden table]"},
       {"Caroline said here is the bowl from Caroline's class. Caroline [shares a photo: a blue "
        "bowl on a wooden table]"}},
      // Statements over the speaker's neighbouring turns join the event they follow.
      {{"Last Friday I went to a council meeting for adoption.", "How was it?",
        "It was emotional, so many people wanted to give children a loving home."},
       {"Caroline went to a council meeting for adoption on 2026-06-12. Caroline said it was "
        "emotional, so many people wanted to give children a loving home"}},
      // A stated wish is kept; a condition is not.
      {{"I'd love to volunteer at the animal shelter this summer.",
        "If I had more time I would join you."},
       {"Caroline would love to volunteer at the animal shelter this summer"}},
      // Few words are enough about oneself, unless they point back into the talk.
      {{"We've got a pup and a kitty.", "My sister lives there."},
       {"Caroline and others have got a pup and a kitty"}},
  };
  const int64_t monday = *ParseIsoToMicros("2026-06-15T10:00:00Z");
  RuleBasedExtractor extractor;
  for (const TurnsCase& c : cases) {
    std::vector<ConversationMessage> messages;
    for (size_t i = 0; i < c.turns.size(); ++i) {
      messages.push_back({"user", c.turns[i], monday, i % 2 == 0 ? "Caroline" : "Melanie"});
    }
    auto facts = extractor.ExtractFacts(messages);
    ASSERT_TRUE(facts.ok());
    EXPECT_EQ(FactTexts(*facts), c.facts) << c.turns[0];
  }
}

TEST(RuleBasedGrammarTest, JoinedStatementsCiteEveryTurnAndStopAtTheLimit) {
  const int64_t t = *ParseIsoToMicros("2026-06-15T10:00:00Z");
  const std::vector<ConversationMessage> talk = {
      {"user", "Last Friday I went to a council meeting for adoption.", t, "Caroline"},
      {"user", "How was it?", t, "Melanie"},
      {"user", "It was emotional, so many people wanted to give children a loving home.", t,
       "Caroline"}};
  auto joined = RuleBasedExtractor().ExtractFacts(talk);
  ASSERT_TRUE(joined.ok());
  ASSERT_EQ(joined->size(), 1u);
  EXPECT_EQ((*joined)[0].sources, (std::vector<int32_t>{0, 2}));

  RuleBasedExtractorOptions apart;
  apart.consolidate_chars = 0;
  auto single = RuleBasedExtractor(apart).ExtractFacts(talk);
  ASSERT_TRUE(single.ok());
  ASSERT_EQ(single->size(), 2u);
  EXPECT_EQ((*single)[1].sources, (std::vector<int32_t>{2}));

  RuleBasedExtractorOptions near;
  near.consolidate_turn_gap = 1;  // the speaker's next turn is two messages on
  auto gap = RuleBasedExtractor(near).ExtractFacts(talk);
  ASSERT_TRUE(gap.ok());
  EXPECT_EQ(gap->size(), 2u);
}

}  // namespace
}  // namespace engram
