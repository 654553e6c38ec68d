#include "extract/ocr/image_text.h"

#include <gtest/gtest.h>
#include <stdlib.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <sstream>

namespace engram {
namespace {

// A PNG showing `text`, rendered by ImageMagick; empty when `convert` is unavailable.
std::string RenderPng(const std::string& text) {
  char templ[] = "/tmp/engram-ocr-XXXXXX.png";
  const int fd = mkstemps(templ, 4);
  if (fd < 0) return "";
  close(fd);
  const std::string cmd =
      "convert -font /usr/share/fonts/truetype/dejavu/DejaVuSans.ttf -pointsize 48 "
      "-background white -fill black label:'" +
      text + "' " + templ + " >/dev/null 2>&1";
  std::string png;
  if (std::system(cmd.c_str()) == 0) {
    std::ifstream in(templ, std::ios::binary);
    std::stringstream ss;
    ss << in.rdbuf();
    png = ss.str();
  }
  std::remove(templ);
  return png;
}

TEST(ImageTextTest, ReadsRenderedText) {
  auto ocr = ImageTextExtractor::Create({});
  ASSERT_TRUE(ocr.ok()) << ocr.status().ToString();
  const std::string png = RenderPng("zebrafinch quasar");
  if (png.empty()) GTEST_SKIP() << "ImageMagick convert with DejaVu fonts is not available";
  auto text = (*ocr)->Extract(png);
  ASSERT_TRUE(text.ok()) << text.status().ToString();
  EXPECT_NE(text->find("zebrafinch"), std::string::npos) << *text;
  EXPECT_NE(text->find("quasar"), std::string::npos) << *text;
}

TEST(ImageTextTest, CorruptAndOversizedImagesFailAlone) {
  auto ocr = ImageTextExtractor::Create({.max_pixels = 100});
  ASSERT_TRUE(ocr.ok());
  EXPECT_FALSE((*ocr)->Extract("").ok());
  EXPECT_FALSE((*ocr)->Extract("\x89PNG\r\n\x1a\n garbage").ok());
  const std::string png = RenderPng("big");
  if (!png.empty()) {
    auto text = (*ocr)->Extract(png);
    ASSERT_FALSE(text.ok());
    EXPECT_NE(text.status().message().find("too large"), std::string::npos);
  }
}

}  // namespace
}  // namespace engram
