#include "extract/documents/chunker.h"

#include <gtest/gtest.h>

namespace engram {
namespace {

TEST(ChunkerTest, HeadingsStartChunksAndAreRemembered) {
  auto chunks = ChunkDocument("Intro line.\n\n# Setup\n\nInstall it.\n\n## Usage\n\nRun it.\n",
                              {.max_chars = 200, .overlap_chars = 20});
  ASSERT_EQ(chunks.size(), 3u);
  EXPECT_EQ(chunks[0].heading, "");
  EXPECT_EQ(chunks[0].text, "Intro line.");
  EXPECT_EQ(chunks[1].heading, "Setup");
  EXPECT_EQ(chunks[1].text, "Install it.");
  EXPECT_EQ(chunks[2].heading, "Usage");
  EXPECT_EQ(chunks[2].text, "Run it.");
  for (size_t i = 0; i < chunks.size(); ++i) EXPECT_EQ(chunks[i].position, static_cast<int>(i));
}

TEST(ChunkerTest, PacksWholeParagraphsUpToTheLimit) {
  std::string text;
  for (int i = 0; i < 10; ++i) text += "Paragraph number " + std::to_string(i) + " is here.\n\n";
  auto chunks = ChunkDocument(text, {.max_chars = 100, .overlap_chars = 0});
  ASSERT_GT(chunks.size(), 1u);
  for (const auto& c : chunks) {
    EXPECT_LE(c.text.size(), 100u);
    // Paragraphs are never cut when they fit in a chunk.
    EXPECT_EQ(c.text.back(), '.') << c.text;
  }
}

TEST(ChunkerTest, LongParagraphIsCutAtWordsWithOverlap) {
  std::string text;
  for (int i = 0; i < 400; ++i) text += "word" + std::to_string(i) + " ";
  auto chunks = ChunkDocument(text, {.max_chars = 300, .overlap_chars = 60});
  ASSERT_GT(chunks.size(), 5u);
  for (size_t i = 0; i < chunks.size(); ++i) {
    EXPECT_LE(chunks[i].text.size(), 300u);
    EXPECT_NE(chunks[i].text.back(), ' ');
    if (i > 0) {
      // The next chunk starts with words the previous one ended with.
      const std::string first_word = chunks[i].text.substr(0, chunks[i].text.find(' '));
      EXPECT_NE(chunks[i - 1].text.find(first_word), std::string::npos) << i;
    }
  }
  EXPECT_NE(chunks.back().text.find("word399"), std::string::npos);
}

TEST(ChunkerTest, NeverSplitsUtf8Characters) {
  std::string text;
  for (int i = 0; i < 500; ++i) text += "\xE6\x97\xA5";  // 日, no spaces at all
  auto chunks = ChunkDocument(text, {.max_chars = 100, .overlap_chars = 10});
  size_t total = 0;
  for (const auto& c : chunks) {
    EXPECT_EQ(c.text.size() % 3, 0u);
    total += c.text.size();
  }
  EXPECT_GE(total, text.size());
}

TEST(ChunkerTest, EmptyTextHasNoChunks) { EXPECT_TRUE(ChunkDocument("  \n\n \n", {}).empty()); }

}  // namespace
}  // namespace engram
