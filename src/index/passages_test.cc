#include "index/passages.h"

#include <gtest/gtest.h>

#include <random>
#include <string>

#include "common/utf8.h"

namespace engram {
namespace {

// Every span in order, touching, covering the text; sizes within the limits.
void ExpectCovers(std::string_view text, const std::vector<PassageSpan>& spans) {
  ASSERT_FALSE(spans.empty());
  EXPECT_EQ(spans.front().begin, 0u);
  EXPECT_EQ(spans.back().end, text.size());
  for (size_t i = 0; i < spans.size(); ++i) {
    if (i > 0) {
      EXPECT_EQ(spans[i].begin, spans[i - 1].end);
    }
    if (spans.size() > 1) {
      EXPECT_LE(spans[i].size(), kMaxPassageBytes) << "passage " << i;
      if (i + 1 < spans.size()) {
        EXPECT_GE(spans[i].size(), kMinPassageBytes) << "passage " << i;
      }
    }
    EXPECT_TRUE(IsValidUtf8(text.substr(spans[i].begin, spans[i].size()))) << "passage " << i;
  }
}

std::string CFunction(int i) {
  std::string body = "int function_" + std::to_string(i) + "(int a, int b) {\n";
  for (int line = 0; line < 12; ++line) {
    body += "  total_" + std::to_string(line) + " = compute(a, b, " + std::to_string(line) + ");\n";
  }
  return body + "  return a + b;\n}\n";
}

TEST(PassagesTest, ShortTextIsOnePassage) {
  EXPECT_EQ(SplitPassages("").size(), 1u);
  const std::string chat(kWholeMessageBytes, 'a');
  const auto spans = SplitPassages(chat);
  ASSERT_EQ(spans.size(), 1u);
  EXPECT_EQ(spans[0].end, chat.size());
}

TEST(PassagesTest, CodeIsCutBetweenFunctions) {
  std::string code;
  for (int i = 0; i < 40; ++i) code += CFunction(i) + "\n";
  const auto spans = SplitPassages(code);
  ExpectCovers(code, spans);
  ASSERT_GT(spans.size(), 3u);
  for (size_t i = 1; i < spans.size(); ++i) {
    EXPECT_TRUE(code.compare(spans[i].begin, 13, "int function_") == 0)
        << code.substr(spans[i].begin, 40);
  }
}

TEST(PassagesTest, CodeWithoutBlankLinesIsCutAtDefinitions) {
  std::string code;
  for (int i = 0; i < 40; ++i) code += CFunction(i);
  const auto spans = SplitPassages(code);
  ExpectCovers(code, spans);
  for (size_t i = 1; i < spans.size(); ++i) {
    EXPECT_TRUE(code.compare(spans[i].begin, 13, "int function_") == 0)
        << code.substr(spans[i].begin, 40);
  }
}

TEST(PassagesTest, DiffIsCutAtHunks) {
  std::string diff = "diff --git a/x.c b/x.c\n--- a/x.c\n+++ b/x.c\n";
  for (int h = 0; h < 30; ++h) {
    diff += "@@ -" + std::to_string(h * 40) + ",7 +" + std::to_string(h * 40) + ",7 @@\n";
    for (int line = 0; line < 8; ++line) {
      diff += (line == 4 ? "-" : " ") + std::string("  value = lookup(table, key") +
              std::to_string(line) + ");\n";
    }
    diff += "+  value = lookup_fast(table, key);\n";
  }
  const auto spans = SplitPassages(diff);
  ExpectCovers(diff, spans);
  ASSERT_GT(spans.size(), 2u);
  for (size_t i = 1; i < spans.size(); ++i) {
    EXPECT_TRUE(diff.compare(spans[i].begin, 3, "@@ ") == 0) << diff.substr(spans[i].begin, 40);
  }
}

TEST(PassagesTest, ProseIsCutAfterSentences) {
  std::string prose;
  for (int i = 0; prose.size() < 12000; ++i) {
    prose += "The committee met on day " + std::to_string(i) + " and agreed on the plan. ";
  }
  const auto spans = SplitPassages(prose);
  ExpectCovers(prose, spans);
  for (size_t i = 1; i < spans.size(); ++i) {
    EXPECT_EQ(prose.compare(spans[i].begin - 2, 2, ". "), 0);
  }
}

TEST(PassagesTest, UnbrokenTextIsCutOnCharacterBoundaries) {
  std::string text;
  while (text.size() < 10000) text += "é漢";  // 2- and 3-byte characters, no spaces
  ExpectCovers(text, SplitPassages(text));
}

TEST(PassagesTest, TitleIsTheFirstNonBlankLineAndPrefixesLaterPassages) {
  EXPECT_EQ(MessageTitle("\n  \n  File: src/a.c  \nint x;\n"), "File: src/a.c");
  EXPECT_EQ(MessageTitle(" \n\t"), "");
  const std::string long_line(300, 'x');
  EXPECT_EQ(MessageTitle(long_line), std::string(kTitleBytes, 'x') + "…");
  const std::string text = "File: a.c\nint x;\nint y;\n";
  EXPECT_EQ(PassageEmbeddingText(text, "File: a.c", {0, 17}), "File: a.c\nint x;\n");
  EXPECT_EQ(PassageEmbeddingText(text, "File: a.c", {17, 24}), "File: a.c\nint y;\n");
}

TEST(PassagesTest, RandomTextsAreCovered) {
  std::mt19937 rng(7);
  const std::string pieces[] = {"a", "word ", ". ", "\n", "\n\n", "}\n", "é", "漢", "@@ ", "\t"};
  for (int round = 0; round < 200; ++round) {
    std::string text;
    const size_t length = std::uniform_int_distribution<size_t>(0, 30000)(rng);
    while (text.size() < length) {
      text += pieces[std::uniform_int_distribution<size_t>(0, std::size(pieces) - 1)(rng)];
    }
    ExpectCovers(text, SplitPassages(text));
  }
}

}  // namespace
}  // namespace engram
