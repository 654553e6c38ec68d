#include "common/codec.h"

#include <gtest/gtest.h>

#include <random>
#include <string>
#include <vector>

namespace engram {
namespace {

TEST(CodecTest, Base64RoundTrip) {
  std::mt19937 rng(7);
  for (int len = 0; len < 64; ++len) {
    std::string s(len, '\0');
    for (auto& c : s) c = static_cast<char>(rng());
    auto enc = Base64Encode(s);
    auto dec = Base64Decode(enc);
    ASSERT_TRUE(dec.has_value()) << len;
    EXPECT_EQ(*dec, s);
  }
}

TEST(CodecTest, Base64DecodedSizeCountsWhatDecodingYields) {
  const std::vector<std::string> inputs = {
      "", "a", "ab", "abc", "abcd", "hello, world", std::string(1000, 'x')};
  for (const std::string& s : inputs) {
    const std::string enc = Base64Encode(s);
    EXPECT_EQ(Base64DecodedSize(enc), s.size()) << s;
    std::string spaced;
    for (char c : enc) (spaced += c) += (spaced.size() % 7 == 0 ? "\n" : "");
    EXPECT_EQ(Base64DecodedSize(spaced), s.size()) << "whitespace is skipped, as decoding does";
    std::string unpadded = enc.substr(0, enc.find('='));
    EXPECT_EQ(Base64DecodedSize(unpadded), s.size());
    EXPECT_EQ(Base64Decode(unpadded)->size(), s.size());
  }
}

TEST(CodecTest, Base64RejectsBadInput) {
  EXPECT_FALSE(Base64Decode("abc!").has_value());
  EXPECT_FALSE(Base64Decode("a").has_value());
  EXPECT_FALSE(Base64Decode("ab=c").has_value());
  EXPECT_FALSE(Base64Decode("QUJD", 2).has_value());  // over the size limit
  EXPECT_EQ(*Base64Decode("QUJD"), "ABC");
  EXPECT_EQ(*Base64Decode("QUI"), "AB");  // padding optional
}

TEST(CodecTest, FloatVectorBytesAreLittleEndianFloat32) {
  const std::vector<float> v{1.0f, -2.5f};
  EXPECT_EQ(FloatVectorBytes(v), std::string("\x00\x00\x80\x3f\x00\x00\x20\xc0", 8));
  EXPECT_EQ(FloatVectorFromBytes(FloatVectorBytes(v)), v);
  EXPECT_TRUE(FloatVectorBytes({}).empty());
  EXPECT_TRUE(FloatVectorFromBytes("").empty());
}

TEST(CodecTest, FloatVectorFromBytesIgnoresATrailingPartialValue) {
  const std::vector<float> v{0.25f, 3.0f};
  std::string bytes(FloatVectorBytes(v));
  bytes += "\x01\x02";
  EXPECT_EQ(FloatVectorFromBytes(bytes), v);
  EXPECT_TRUE(FloatVectorFromBytes("abc").empty());
}

TEST(CodecTest, HexEncodeIsLowerCaseTwoDigitsAByte) {
  EXPECT_EQ(HexEncode(std::string("\x00\x0f\xa5\xff", 4)), "000fa5ff");
  EXPECT_EQ(HexEncode(""), "");
}

TEST(CodecTest, Sha256) {
  EXPECT_EQ(Sha256Hex("abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
}

TEST(CodecTest, Sha256InPiecesIsTheDigestOfTheWhole) {
  const std::string text = "the quick brown fox jumps over the lazy dog, twice over";
  Sha256 sha;
  for (size_t cut = 0; cut < text.size(); cut += 7)
    sha.Update(std::string_view(text).substr(cut, 7));
  EXPECT_EQ(sha.HexDigest(), Sha256Hex(text));
  EXPECT_EQ(sha.HexDigest(), Sha256Hex("")) << "a digest starts the object over";
}

}  // namespace
}  // namespace engram
