#include "extract/rule_based_extractor.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "common/time_util.h"

namespace engram {
namespace {

using json = nlohmann::json;
using rule_extract::NormalizeForComparison;
using rule_extract::ResolveRelativeDates;
using rule_extract::SplitSentences;

// 2024-05-08T10:00:00Z, a Wednesday.
int64_t Wednesday() { return *ParseIsoToMicros("2024-05-08T10:00:00Z"); }

TEST(SplitSentencesTest, SplitsAtTerminalPunctuationAndLineBreaks) {
  EXPECT_EQ(SplitSentences("I love hiking. Do you?  Great!!! Bye"),
            (std::vector<std::string>{"I love hiking.", "Do you?", "Great!!!", "Bye"}));
  EXPECT_EQ(SplitSentences("first line\nsecond line\r\n\nthird"),
            (std::vector<std::string>{"first line", "second line", "third"}));
  EXPECT_EQ(SplitSentences("He said \"wow.\" Then he left."),
            (std::vector<std::string>{"He said \"wow.\"", "Then he left."}));
  EXPECT_TRUE(SplitSentences("   \n  ").empty());
}

TEST(SplitSentencesTest, KeepsAbbreviationsInitialsDecimalsAndListNumbers) {
  EXPECT_EQ(SplitSentences("I saw Dr. Smith today. It went well."),
            (std::vector<std::string>{"I saw Dr. Smith today.", "It went well."}));
  EXPECT_EQ(SplitSentences("I like fruit, e.g. apples, etc. and more. Really."),
            (std::vector<std::string>{"I like fruit, e.g. apples, etc. and more.", "Really."}));
  EXPECT_EQ(SplitSentences("I read J. R. R. Tolkien. It took 3.5 weeks."),
            (std::vector<std::string>{"I read J. R. R. Tolkien.", "It took 3.5 weeks."}));
  EXPECT_EQ(SplitSentences("1. Buy milk\n2. Call mom"),
            (std::vector<std::string>{"1. Buy milk", "2. Call mom"}));
  EXPECT_EQ(SplitSentences("Visit example.com now. Ok"),
            (std::vector<std::string>{"Visit example.com now.", "Ok"}));
}

TEST(ResolveRelativeDatesTest, DaysWeeksMonthsYears) {
  const int64_t t = Wednesday();
  EXPECT_EQ(ResolveRelativeDates("I bought a Tesla yesterday", t, true),
            "I bought a Tesla on 2024-05-07");
  EXPECT_EQ(ResolveRelativeDates("today and tomorrow.", t, false),
            "on 2024-05-08 and on 2024-05-09.");
  EXPECT_EQ(ResolveRelativeDates("visit Tokyo next month", t, false), "visit Tokyo in June 2024");
  EXPECT_EQ(ResolveRelativeDates("last week", t, true), "in the week of 2024-04-29");
  EXPECT_EQ(ResolveRelativeDates("this week", t, false), "in the week of 2024-05-06");
  EXPECT_EQ(ResolveRelativeDates("3 days ago", t, true), "on 2024-05-05");
  EXPECT_EQ(ResolveRelativeDates("two weeks ago", t, true), "in the week of 2024-04-22");
  EXPECT_EQ(ResolveRelativeDates("a month ago", t, true), "in April 2024");
  EXPECT_EQ(ResolveRelativeDates("in 2 weeks", t, false), "in the week of 2024-05-20");
  EXPECT_EQ(ResolveRelativeDates("in 3 days", t, false), "on 2024-05-11");
  EXPECT_EQ(ResolveRelativeDates("in 8 months", t, false), "in January 2025");
  EXPECT_EQ(ResolveRelativeDates("last year", t, true), "in 2023");
  EXPECT_EQ(ResolveRelativeDates("5 years ago", t, true), "in 2019");
  EXPECT_EQ(ResolveRelativeDates("last night", t, true), "on 2024-05-07");
  EXPECT_EQ(ResolveRelativeDates("this weekend", t, false), "on the weekend of 2024-05-11");
}

TEST(ResolveRelativeDatesTest, WeekdaysAndMonthNamesFollowTheTense) {
  const int64_t t = Wednesday();
  EXPECT_EQ(ResolveRelativeDates("on Monday", t, false), "on 2024-05-13");
  EXPECT_EQ(ResolveRelativeDates("on Monday", t, true), "on 2024-05-06");
  EXPECT_EQ(ResolveRelativeDates("last Friday", t, true), "on 2024-05-03");
  EXPECT_EQ(ResolveRelativeDates("next Friday", t, false), "on 2024-05-10");
  EXPECT_EQ(ResolveRelativeDates("Friday!", t, false), "on 2024-05-10!");
  EXPECT_EQ(ResolveRelativeDates("in March", t, true), "in March 2024");
  EXPECT_EQ(ResolveRelativeDates("in March", t, false), "in March 2025");
  EXPECT_EQ(ResolveRelativeDates("in August", t, true), "in August 2023");
  EXPECT_EQ(ResolveRelativeDates("last March", t, false), "in March 2024");
  EXPECT_EQ(ResolveRelativeDates("on June 3rd", t, false), "on 2024-06-03");
  EXPECT_EQ(ResolveRelativeDates("since yesterday", t, true), "since 2024-05-07");
}

TEST(ResolveRelativeDatesTest, LeavesOtherWordsAlone) {
  const int64_t t = Wednesday();
  EXPECT_EQ(ResolveRelativeDates("I may  go in March 2023", t, true), "I may go in March 2023");
  EXPECT_EQ(ResolveRelativeDates("the last days of summer", t, true), "the last days of summer");
  EXPECT_EQ(ResolveRelativeDates("I swim on Mondays", t, false), "I swim on Mondays");
  EXPECT_EQ(ResolveRelativeDates("every Monday", t, false), "every Monday");
  EXPECT_EQ(ResolveRelativeDates("yesterday", 0, true), "yesterday");
}

TEST(NormalizeForComparisonTest, FoldsCaseContractionsPunctuationAndArticles) {
  EXPECT_EQ(NormalizeForComparison("The user DOESN'T like  coffee."), "user does not like coffee");
  EXPECT_EQ(NormalizeForComparison("User can't stand an open office!"),
            "user can not stand open office");
  EXPECT_EQ(NormalizeForComparison("User\u2019s favorite color is blue"),
            "user's favorite color is blue");
  EXPECT_EQ(NormalizeForComparison("I'm moving on 2024-05-13, it's 3.5 km away"),
            "i am moving on 2024-05-13 it is 3.5 km away");
  EXPECT_EQ(NormalizeForComparison("I DON'T, (I'm) the user's"), "i do not i am user's");
  EXPECT_EQ(NormalizeForComparison("  ...  "), "");
}

TEST(RuleBasedExtractorTest, NamesItsSpeaker) {
  using rule_extract::NamesItsSpeaker;
  EXPECT_TRUE(NamesItsSpeaker("Caroline: I adopted a dog."));
  EXPECT_TRUE(NamesItsSpeaker("Mia Wong: See you."));
  EXPECT_TRUE(NamesItsSpeaker("User: hi"));
  EXPECT_FALSE(NamesItsSpeaker("Note: buy milk"));
  EXPECT_FALSE(NamesItsSpeaker("Monday: gym"));
  EXPECT_FALSE(NamesItsSpeaker("caroline: lower case"));
  EXPECT_FALSE(NamesItsSpeaker("A line that names no speaker."));
  EXPECT_FALSE(NamesItsSpeaker("Caroline:no space"));
}

TEST(RuleBasedExtractorTest, OnlyUserMessagesProduceFacts) {
  RuleBasedExtractor extractor;
  const int64_t t = Wednesday();
  auto facts = extractor.ExtractFacts({{"system", "I love hiking.", t},
                                       {"assistant", "I live in Berlin.", t},
                                       {"user", "I love hiking. I love hiking!", t}});
  ASSERT_TRUE(facts.ok());
  EXPECT_EQ(FactTexts(*facts), std::vector<std::string>{"User loves hiking"});
}

TEST(RuleBasedExtractorTest, RespectsLimits) {
  RuleBasedExtractorOptions options;
  options.max_facts = 2;
  options.max_fact_chars = 30;
  RuleBasedExtractor extractor(options);
  auto facts = extractor.ExtractFacts(
      {{"user",
        "I love hiking. I love tea. I love long walks on the beach at sunset with friends. "
        "I love jazz.",
        Wednesday()}});
  ASSERT_TRUE(facts.ok());
  EXPECT_EQ(FactTexts(*facts), (std::vector<std::string>{"User loves hiking", "User loves tea"}));
}

TEST(RuleBasedExtractorTest, ReconcileNeverInventsIdsAndSkipsBlankAndRepeatedFacts) {
  RuleBasedExtractor extractor;
  auto decisions =
      extractor.Reconcile({{"  ", {}},
                           {"User lives in Paris", {{"m-1", "User lives in Berlin", 0.8f}}},
                           {"User lives in Paris.", {}},
                           {"User likes tea", {{"", "User likes tea", 1.0f}}}});
  ASSERT_TRUE(decisions.ok());
  ASSERT_EQ(decisions->size(), 2u);
  EXPECT_EQ((*decisions)[0].action, MemoryAction::kUpdate);
  EXPECT_EQ((*decisions)[0].memory_id, "m-1");
  EXPECT_EQ((*decisions)[0].text, "User lives in Paris");
  EXPECT_EQ((*decisions)[1].action, MemoryAction::kAdd);
  EXPECT_EQ((*decisions)[1].memory_id, "");
}

TEST(RuleBasedExtractorTest, ConcurrentCallsAgree) {
  const RuleBasedExtractor extractor;
  const std::vector<ConversationMessage> messages = {
      {"user", "I moved to Paris last month. My favorite color is blue. I don't eat meat.",
       Wednesday()}};
  const auto expected = extractor.ExtractFacts(messages);
  ASSERT_TRUE(expected.ok());
  std::vector<std::thread> threads;
  std::vector<int> mismatches(4, 0);
  for (int i = 0; i < 4; ++i) {
    threads.emplace_back([&, i] {
      for (int k = 0; k < 200; ++k) {
        const auto facts = extractor.ExtractFacts(messages);
        const auto decisions =
            extractor.Reconcile({{"User lives in Paris", {{"m-1", "User lives in Berlin", 0.8f}}}});
        if (!facts.ok() || *facts != *expected || !decisions.ok() || decisions->size() != 1) {
          ++mismatches[i];
        }
      }
    });
  }
  for (std::thread& t : threads) t.join();
  EXPECT_EQ(mismatches, std::vector<int>(4, 0));
}

// ---------------------------------------------------------------------------------------------
// Corpus: tests/data/extraction_corpus.json. Each case is a conversation with the facts expected
// from it and, optionally, existing memories with the decisions expected for those facts (or for
// "reconcile_facts" when given). All mismatches are reported together.

std::string DecisionString(const MemoryDecision& d) {
  std::string s(MemoryActionName(d.action));
  if (!d.memory_id.empty()) s += " " + d.memory_id;
  if (!d.text.empty()) s += " \"" + d.text + "\"";
  return s;
}

std::string Listing(const std::vector<std::string>& items) {
  std::string s = "[";
  for (const std::string& i : items) s += (s.size() > 1 ? ", \"" : "\"") + i + "\"";
  return s + "]";
}

TEST(RuleBasedExtractorTest, Corpus) {
  const char* root = std::getenv("ENGRAM_SOURCE_DIR");
  ASSERT_NE(root, nullptr);
  std::ifstream in(std::string(root) + "/tests/data/extraction_corpus.json");
  ASSERT_TRUE(in.good()) << "tests/data/extraction_corpus.json not found";
  const json corpus = json::parse(in);
  const int64_t default_time = *ParseIsoToMicros(corpus.value("time", "2024-05-08T10:00:00Z"));
  RuleBasedExtractor extractor;
  std::ostringstream failures;
  int failed = 0, cases = 0;
  for (const json& c : corpus.at("cases")) {
    ++cases;
    const std::string name = c.at("name");
    std::vector<ConversationMessage> messages;
    for (const json& m : c.value("messages", json::array())) {
      const int64_t t =
          m.contains("time") ? *ParseIsoToMicros(m["time"].get<std::string>()) : default_time;
      messages.push_back({m.at("role"), m.at("content"), t, m.value("name", "")});
    }
    const auto facts = extractor.ExtractFacts(messages);
    ASSERT_TRUE(facts.ok());
    if (c.contains("facts")) {
      const auto expected = c["facts"].get<std::vector<std::string>>();
      if (FactTexts(*facts) != expected) {
        ++failed;
        failures << name << ":\n  facts    " << Listing(FactTexts(*facts)) << "\n  expected "
                 << Listing(expected) << "\n";
      }
    }
    if (!c.contains("decisions")) continue;
    std::vector<SimilarMemory> existing;
    for (const json& m : c.value("existing", json::array())) {
      existing.push_back({m.at("id"), m.at("text"), m.value("similarity", 0.0f)});
    }
    std::vector<std::string> to_reconcile =
        c.contains("reconcile_facts") ? c["reconcile_facts"].get<std::vector<std::string>>()
                                      : FactTexts(*facts);
    std::vector<FactCandidates> input;
    for (const std::string& f : to_reconcile) input.push_back({f, existing});
    const auto decisions = extractor.Reconcile(input);
    ASSERT_TRUE(decisions.ok());
    std::vector<std::string> got, want;
    for (const MemoryDecision& d : *decisions) got.push_back(DecisionString(d));
    for (const json& d : c["decisions"]) {
      want.push_back(DecisionString({d.at("action") == "ADD"      ? MemoryAction::kAdd
                                     : d.at("action") == "UPDATE" ? MemoryAction::kUpdate
                                     : d.at("action") == "DELETE" ? MemoryAction::kDelete
                                                                  : MemoryAction::kNone,
                                     d.value("id", ""), d.value("text", "")}));
    }
    if (got != want) {
      ++failed;
      failures << name << ":\n  decisions " << Listing(got) << "\n  expected  " << Listing(want)
               << "\n";
    }
  }
  EXPECT_GE(cases, 25);
  EXPECT_EQ(failed, 0) << failed << " of " << cases << " corpus cases differ:\n" << failures.str();
}

// PROBE-BEGIN
TEST(RuleBasedExtractorTest, Probe) {
  const char* path = std::getenv("ENGRAM_PROBE");
  if (path == nullptr) GTEST_SKIP();
  std::ifstream in(path);
  const json probes = json::parse(in);
  RuleBasedExtractor extractor;
  for (const json& c : probes) {
    std::vector<ConversationMessage> messages;
    for (const json& m : c) {
      const int64_t t = *ParseIsoToMicros(m.value("time", "2026-06-15T10:00:00Z"));
      messages.push_back({m.at("role"), m.at("content"), t, m.value("name", "")});
    }
    const auto facts = extractor.ExtractFacts(messages);
    std::string line;
    for (const auto& m : c)
      line +=
          "[" + m.at("role").get<std::string>() + "] " + m.at("content").get<std::string>() + "  ";
    std::printf("PROBE %s\n", line.c_str());
    for (const ExtractedFact& f : *facts) {
      std::string src;
      for (int32_t s : f.sources) src += std::to_string(s) + ",";
      std::printf("   -> %s  {%s}\n", f.text.c_str(), src.c_str());
    }
    if (facts->empty()) std::printf("   -> (nothing)\n");
  }
}
// PROBE-END

}  // namespace
}  // namespace engram
