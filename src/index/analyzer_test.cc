#include "index/analyzer.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <thread>
#include <vector>

namespace engram {
namespace {

using ::testing::Contains;
using ::testing::ElementsAre;
using ::testing::IsEmpty;
using ::testing::Not;
using ::testing::SizeIs;

std::vector<std::string> Terms(std::string_view text, AnalyzerOptions options = {}) {
  return Analyzer(options).Analyze(text);
}

TEST(AnalyzerTest, EmptyAndBlankInput) {
  EXPECT_THAT(Terms(""), IsEmpty());
  EXPECT_THAT(Terms(" \t\n  ,;!? "), IsEmpty());
}

TEST(AnalyzerTest, NfkcCaseFolding) {
  EXPECT_THAT(Terms("ＡＢＣ"), ElementsAre("abc"));     // Full-width to ASCII.
  EXPECT_THAT(Terms("Straße"), ElementsAre("strass"));  // Full case folding, then stemmed.
  EXPECT_THAT(Terms("ﬁle"), ElementsAre("file"));       // Ligature decomposed.
  EXPECT_EQ(Terms("HELLO World"), Terms("hello world"));
}

TEST(AnalyzerTest, StemsEnglishWords) {
  EXPECT_THAT(Terms("running"), ElementsAre("run"));
  EXPECT_THAT(Terms("Running runners connected"), ElementsAre("run", "runner", "connect"));
  AnalyzerOptions no_stem;
  no_stem.stem = false;
  EXPECT_THAT(Terms("running", no_stem), ElementsAre("running"));
}

TEST(AnalyzerTest, DropsStopWordsAndKeepsOrderAndDuplicates) {
  EXPECT_THAT(Terms("What did the user say about the coffee and the coffee?"),
              ElementsAre("user", "say", "coffe", "coffe"));
  EXPECT_THAT(Terms("the a is of"), IsEmpty());
  AnalyzerOptions keep;
  keep.remove_stopwords = false;
  EXPECT_THAT(Terms("the cat", keep), ElementsAre("the", "cat"));
}

TEST(AnalyzerTest, StopWordList) {
  for (const char* word : {"the", "a", "is", "what", "did", "when", "how", "not"}) {
    EXPECT_TRUE(Analyzer::IsStopWord(word)) << word;
  }
  for (const char* word : {"coffee", "user", "memory", "june"}) {
    EXPECT_FALSE(Analyzer::IsStopWord(word)) << word;
  }
}

TEST(AnalyzerTest, PossessivesAndCurlyApostrophes) {
  EXPECT_THAT(Terms("John's book"), ElementsAre("john", "book"));
  EXPECT_EQ(Terms("don’t"), Terms("don't"));
  EXPECT_THAT(Terms("it's"), IsEmpty());  // "it" is a stop word once "'s" is stripped.
}

TEST(AnalyzerTest, SegmentsChinese) {
  std::vector<std::string> terms = Terms("我喜欢喝咖啡");
  EXPECT_GE(terms.size(), 3u);
  EXPECT_THAT(terms, Contains("咖啡"));
  EXPECT_THAT(terms, Contains("喜欢"));
}

TEST(AnalyzerTest, SegmentsJapaneseWithoutStemming) {
  std::vector<std::string> terms = Terms("私はコーヒーが好きです");
  EXPECT_GE(terms.size(), 3u);
  EXPECT_THAT(terms, Contains("コーヒー"));
}

TEST(AnalyzerTest, MixedScripts) {
  EXPECT_THAT(Terms("用户喜欢 coffee"), Contains("coffe"));
  EXPECT_THAT(Terms("使用std::vector吗"), Contains("std::vector"));
}

TEST(AnalyzerTest, CamelCaseIdentifier) {
  EXPECT_THAT(Terms("getUserName"), ElementsAre("getusername", "get", "user", "name"));
  EXPECT_THAT(Terms("HTTPServer"), ElementsAre("httpserver", "http", "server"));
  EXPECT_THAT(Terms("base64Encode"), ElementsAre("base64encode", "base64", "encod"));
}

TEST(AnalyzerTest, AcronymPluralIsNotAnIdentifier) {
  EXPECT_THAT(Terms("URLs"), ElementsAre("url"));
  EXPECT_THAT(Terms("utf8 sha256"), ElementsAre("utf8", "sha256"));
}

TEST(AnalyzerTest, SnakeAndKebabCase) {
  EXPECT_THAT(Terms("max_token_bytes"), ElementsAre("max_token_bytes", "max", "token", "byte"));
  EXPECT_THAT(Terms("kebab-case"), ElementsAre("kebab-case", "kebab", "case"));
  // The word breaker keeps "__init__" as one word; it is emitted whole and as its part.
  EXPECT_THAT(Terms("__init__"), ElementsAre("__init__", "init"));
}

TEST(AnalyzerTest, PathsAndDottedNames) {
  EXPECT_THAT(Terms("a/b/c.py"), ElementsAre("a/b/c.py", "b", "c", "py"));  // "a" is a stop word.
  EXPECT_THAT(Terms("see src/index/bm25.cc."),
              ElementsAre("see", "src/index/bm25.cc", "src", "index", "bm25", "cc"));
  EXPECT_THAT(Terms("std::vector<int>"), ElementsAre("std::vector", "std", "vector", "int"));
  EXPECT_THAT(Terms("(os.path.join)"), ElementsAre("os.path.join", "os", "path", "join"));
}

TEST(AnalyzerTest, IdentifierSplittingCanBeDisabled) {
  AnalyzerOptions options;
  options.split_identifiers = false;
  EXPECT_THAT(Terms("getUserName", options), ElementsAre("getusernam"));
  EXPECT_THAT(Terms("a/b/c.py", options), Not(Contains("a/b/c.py")));
}

TEST(AnalyzerTest, Numbers) {
  EXPECT_THAT(Terms("in 2023 version 3.5 at 10.0.0.1"),
              ElementsAre("2023", "version", "3.5", "10.0.0.1"));
  EXPECT_THAT(Terms("2023-01-05"), ElementsAre("2023-01-05", "2023", "01", "05"));
}

TEST(AnalyzerTest, AbbreviationsStayWords) { EXPECT_THAT(Terms("e.g."), ElementsAre("e.g")); }

TEST(AnalyzerTest, AccentedLatinWordsAreNotCutIntoIdentifiers) {
  EXPECT_THAT(Terms("naïve_bayes"), ElementsAre("naïve_bayes", "naïv", "bay"));
  EXPECT_THAT(Terms("café"), ElementsAre("café"));
}

TEST(AnalyzerTest, InvalidUtf8DoesNotCrash) {
  std::string bad = "bad\xff\xfe utf8 \xc3";
  EXPECT_THAT(Terms(bad), ElementsAre("bad", "utf8"));
  std::string garbage;
  for (int i = 0; i < 4096; ++i) garbage.push_back(static_cast<char>((i * 131 + 7) & 0xff));
  EXPECT_NO_FATAL_FAILURE(Terms(garbage));
  EXPECT_NO_FATAL_FAILURE(Terms(std::string("\0abc\0", 5)));
}

TEST(AnalyzerTest, DropsOverlongTokens) {
  std::string hash(200, 'f');
  EXPECT_THAT(Terms("commit " + hash + " merged"), ElementsAre("commit", "merg"));
  AnalyzerOptions small;
  small.max_token_bytes = 6;
  // The whole identifier is too long but its parts are kept.
  EXPECT_THAT(Terms("very_long_identifier", small), ElementsAre("long"));
}

TEST(AnalyzerTest, LongInput) {
  std::string text;
  for (int i = 0; i < 20000; ++i) text += "memory servers store getUserName facts 123 ";
  std::vector<std::string> terms = Terms(text);
  EXPECT_THAT(terms, SizeIs(20000 * 9));
  // One enormous identifier and one enormous word: bounded, no quadratic blow-up.
  std::string ident;
  for (int i = 0; i < 50000; ++i) ident += "ab_";
  EXPECT_THAT(Terms(ident), SizeIs(50000));  // Whole dropped (too long), every part kept.
  EXPECT_THAT(Terms(std::string(1 << 20, 'x')), IsEmpty());
}

TEST(AnalyzerTest, AnalyzeQueryMatchesAnalyze) {
  Analyzer analyzer;
  EXPECT_EQ(analyzer.AnalyzeQuery("What is getUserName in 用户?"),
            analyzer.Analyze("What is getUserName in 用户?"));
}

TEST(AnalyzerTest, ConcurrentUseGivesSameResults) {
  Analyzer analyzer;
  const std::string text = "The HTTPServer 喜欢 running snake_case runners, 私はコーヒー";
  const std::vector<std::string> expected = analyzer.Analyze(text);
  std::vector<std::thread> threads;
  std::vector<int> mismatches(4, 0);
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < 200; ++i) {
        if (analyzer.Analyze(text) != expected) ++mismatches[t];
      }
    });
  }
  for (std::thread& thread : threads) thread.join();
  EXPECT_THAT(mismatches, ::testing::Each(0));
}

}  // namespace
}  // namespace engram
