#include "embed/sentencepiece_tokenizer.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

namespace engram {
namespace {

std::vector<SentencePieceTokenizer::Piece> Reserved() {
  return {{"\xEF\xBF\xBD", 0}, {"<s>", 0}, {"</s>", 0}, {"x1", 0}, {"x2", 0}, {"x3", 0}};
}

TEST(SentencePieceTokenizerTest, PreprocessNormalisesAndMarksSpaces) {
  EXPECT_EQ(SentencePieceTokenizer::Preprocess(""), "");
  EXPECT_EQ(SentencePieceTokenizer::Preprocess("a b"),
            "\xE2\x96\x81"
            "a\xE2\x96\x81"
            "b");
  // NFKC: the "fi" ligature and full-width letters fold; case is kept.
  EXPECT_EQ(SentencePieceTokenizer::Preprocess("\xEF\xAC\x81 \xEF\xBC\xA1"),
            "\xE2\x96\x81"
            "fi\xE2\x96\x81"
            "A");
  // Only U+0020 becomes the marker; a tab stays.
  EXPECT_EQ(SentencePieceTokenizer::Preprocess("a\tb"),
            "\xE2\x96\x81"
            "a\tb");
}

TEST(SentencePieceTokenizerTest, EqualScoresPreferTheLaterCandidate) {
  auto pieces = Reserved();
  pieces.push_back(
      {"\xE2\x96\x81"
       "ab",
       -2.0});  // 6: one piece, score -2
  pieces.push_back(
      {"\xE2\x96\x81"
       "a",
       -1.0});                               // 7
  pieces.push_back({"b", -1.0});             // 8: "▁a"+"b" also scores -2
  pieces.push_back({"a", -5.0});             // 9: keeps every position reachable
  pieces.push_back({"\xE2\x96\x81", -5.0});  // 10
  SentencePieceTokenizer tok(pieces);
  // Both segmentations score -2; the shorter final piece is visited later and wins.
  EXPECT_EQ(tok.Encode("ab"), (std::vector<int>{7, 8}));
}

TEST(SentencePieceTokenizerTest, BetterScoreWins) {
  auto pieces = Reserved();
  pieces.push_back(
      {"\xE2\x96\x81"
       "ab",
       -1.5});
  pieces.push_back(
      {"\xE2\x96\x81"
       "a",
       -1.0});
  pieces.push_back({"b", -1.0});
  pieces.push_back({"a", -5.0});
  pieces.push_back({"\xE2\x96\x81", -5.0});
  SentencePieceTokenizer tok(pieces);
  EXPECT_EQ(tok.Encode("ab"), (std::vector<int>{6}));
}

// The reference treats a position no piece ends at as score 0 (its "unset" value), so an unknown
// character starting there beats every real piece. Odd, but the model saw these ids.
TEST(SentencePieceTokenizerTest, UnreachablePositionQuirkIsKept) {
  auto pieces = Reserved();
  pieces.push_back(
      {"\xE2\x96\x81"
       "ab",
       -2.0});
  pieces.push_back(
      {"\xE2\x96\x81"
       "a",
       -1.0});
  pieces.push_back({"b", -1.0});
  SentencePieceTokenizer tok(pieces);
  // Verified with the reference JavaScript tokeniser on the same vocabulary.
  EXPECT_EQ(tok.Encode("ab"), (std::vector<int>{0, 8}));
}

TEST(SentencePieceTokenizerTest, UnknownCharactersMergeIntoOneZero) {
  auto pieces = Reserved();
  pieces.push_back({"\xE2\x96\x81", -1.0});  // 6
  pieces.push_back({"a", -1.0});             // 7
  SentencePieceTokenizer tok(pieces);
  EXPECT_EQ(tok.Encode("a\xE2\x82\xAC\xE2\x82\xAC"
                       "a"),
            (std::vector<int>{6, 7, 0, 7}));
  EXPECT_EQ(tok.Encode("zz"), (std::vector<int>{6, 0}));
  // Reserved pieces are never matched, even when the text contains them literally.
  EXPECT_EQ(tok.Encode("<s>"), (std::vector<int>{6, 0}));
}

TEST(SentencePieceTokenizerTest, DuplicatePieceUsesLastId) {
  auto pieces = Reserved();
  pieces.push_back({"\xE2\x96\x81", -1.0});  // 6
  pieces.push_back({"q", -1.0});             // 7
  pieces.push_back({"q", -3.0});             // 8 overrides 7
  SentencePieceTokenizer tok(pieces);
  EXPECT_EQ(tok.Encode("q"), (std::vector<int>{6, 8}));
}

// Ids produced by the reference JavaScript tokeniser (@energetic-ai/embeddings 0.2.0) with the
// package's vocab.json.
TEST(SentencePieceTokenizerTest, MatchesReferenceRuntimeIds) {
  const char* root = std::getenv("ENGRAM_SOURCE_DIR");
  if (root == nullptr) GTEST_SKIP() << "ENGRAM_SOURCE_DIR not set";
  const std::string vocab = std::string(root) + "/third_party/model/package/dist/vocab.json";
  if (!std::filesystem::exists(vocab)) GTEST_SKIP() << "model package missing: " << vocab;
  auto tok = SentencePieceTokenizer::LoadVocabJson(vocab);
  ASSERT_TRUE(tok.ok()) << tok.status().ToString();
  ASSERT_EQ((*tok)->vocab_size(), 8000);

  const std::vector<std::pair<std::string, std::vector<int>>> cases = {
      {"I like coffee", {16, 60, 3741}},
      {"I enjoy espresso", {16, 1153, 3053, 2193, 102}},
      {"The train leaves at noon", {34, 1871, 764, 7, 38, 104, 175}},
      {"", {}},
      {" ", {30, 30}},
      {"Hello world.", {341, 4125, 311, 6}},
      {"\xEF\xAC\x81"
       "ne \xEF\xBC\xA6\xEF\xBD\x95\xEF\xBD\x8C\xEF\xBD\x8C width",
       {839, 6714, 7916}},
      {"a  b\tc\nd", {11, 30, 464, 0, 131, 0, 29}},
      {"\xE6\x97\xA5\xE6\x9C\xAC\xE8\xAA\x9E\xE3\x81\xAE\xE3\x83\x86\xE3\x82\xAD\xE3\x82\xB9\xE3"
       "\x83\x88",
       {30, 0}},
      {"emoji \xF0\x9F\x98\x80\xF0\x9F\x98\x80 here", {299, 451, 2501, 30, 0, 280}},
      {"x\xE2\x82\xAC\xE2\x82\xAC"
       "y",
       {649, 5853, 5853, 48}},
      {":30 at 10:30:00", {30, 4177, 38, 320, 4177, 5920}},
      {"\xE2\x80\x9D"
       "5 dollars",
       {30, 4464, 3073}},
      {"don't STOP me now!!!", {101, 13, 17, 114, 3879, 181, 84, 169, 1300}},
      {"http://example.com/a_b?c=d",
       {290, 255, 773, 1563, 147, 6, 167, 68, 86, 435, 151, 54, 131, 413, 29}},
      {"  leading and trailing  ", {30, 30, 2428, 12, 5578, 23, 30, 30}},
      {"na\xC3\xAFve caf\xC3\xA9 r\xC3\xA9sum\xC3\xA9",
       {1216, 0, 105, 976, 209, 1133, 1067, 1133, 7, 400, 1133}},
      {"\xC2\xA0nbsp", {30, 1107, 1436, 157}},
      {"<s> </s> extra_token_id_1",
       {4787, 7, 1431, 4787, 68, 7, 1431, 1501, 435, 266, 3032, 435, 303, 435, 363}},
  };
  for (const auto& [text, ids] : cases) {
    EXPECT_EQ((*tok)->Encode(text), ids) << "text: " << text;
  }
}

}  // namespace
}  // namespace engram
