#include "common/ascii.h"

#include <gtest/gtest.h>

namespace engram {
namespace {

TEST(AsciiTest, SpaceIsWhatTheCLocaleCallsSpace) {
  for (int c = 0; c < 256; ++c) {
    EXPECT_EQ(IsAsciiSpace(static_cast<char>(c)), c == ' ' || (c >= '\t' && c <= '\r')) << c;
  }
}

TEST(AsciiTest, Trims) {
  EXPECT_EQ(TrimAsciiSpace(" \t a b \r\n\v\f"), "a b");
  EXPECT_EQ(TrimRightAsciiSpace(" a b \n"), " a b");
  EXPECT_EQ(TrimAsciiSpace(" \n "), "");
  EXPECT_EQ(TrimAsciiSpace(""), "");
  // Non-ASCII bytes (a UTF-8 no-break space) are text, not space.
  EXPECT_EQ(TrimAsciiSpace("\xC2\xA0x\xC2\xA0"), "\xC2\xA0x\xC2\xA0");
}

}  // namespace
}  // namespace engram

namespace engram {
namespace {

TEST(AsciiTest, HexDigits) {
  EXPECT_EQ(HexDigitValue('0'), 0);
  EXPECT_EQ(HexDigitValue('9'), 9);
  EXPECT_EQ(HexDigitValue('a'), 10);
  EXPECT_EQ(HexDigitValue('F'), 15);
  EXPECT_EQ(HexDigitValue('g'), -1);
  EXPECT_EQ(HexDigitValue('/'), -1);
}

TEST(AsciiTest, ComparesIgnoringAsciiCaseOnly) {
  EXPECT_TRUE(EqualsIgnoreAsciiCase("Identity", "identity"));
  EXPECT_TRUE(EqualsIgnoreAsciiCase("", ""));
  EXPECT_FALSE(EqualsIgnoreAsciiCase("gzip", "gzi"));
  EXPECT_FALSE(EqualsIgnoreAsciiCase("a[", "A{"));  // '[' and '{' differ by the case bit
  EXPECT_FALSE(EqualsIgnoreAsciiCase("\xC3\x89", "\xC3\xA9"));  // É / é: not ASCII
}

}  // namespace
}  // namespace engram
