#include "api/content_parts.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "common/codec.h"

namespace engram {
namespace {

const std::string kPng = std::string("\x89PNG\r\n\x1a\n", 8) + "rest-of-png";

TEST(ContentPartsTest, DetectsImagesByMagic) {
  EXPECT_EQ(DetectImageMime(kPng), "image/png");
  EXPECT_EQ(DetectImageMime("\xFF\xD8\xFF\xE0"), "image/jpeg");
  EXPECT_EQ(DetectImageMime("GIF89a..."), "image/gif");
  EXPECT_EQ(DetectImageMime("RIFF\0\0\0\0WEBPVP8 "), std::nullopt);  // literal stops at NUL
  EXPECT_EQ(DetectImageMime(std::string("RIFF\0\0\0\0WEBPVP8 ", 16)), "image/webp");
  EXPECT_EQ(DetectImageMime("hello world"), std::nullopt);
}

TEST(ContentPartsTest, ParsesTextAndImagesAndDeduplicates) {
  std::string url = "data:image/jpeg;base64," + Base64Encode(kPng);  // declared type is ignored
  auto parts = nlohmann::json::array({{{"type", "text"}, {"text", "look"}},
                                      {{"type", "image_url"}, {"image_url", {{"url", url}}}},
                                      {{"type", "image"}, {"image", Base64Encode(kPng)}}});
  ImageCollector images;
  auto r = ParseContentParts(parts, "content", {}, &images);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  ASSERT_EQ(r->size(), 3u);
  EXPECT_EQ((*r)[1].image_mime, "image/png");
  EXPECT_EQ((*r)[1].image_sha256, (*r)[2].image_sha256);
  EXPECT_EQ(images.by_hash.size(), 1u);
}

TEST(ContentPartsTest, RejectsBadParts) {
  ImageCollector images;
  auto bad = [&](nlohmann::json parts) {
    auto r = ParseContentParts(parts, "content", {}, &images);
    EXPECT_FALSE(r.ok());
    return r.status();
  };
  EXPECT_EQ(bad(nlohmann::json::array()).message(), "content must not be empty");
  EXPECT_EQ(bad({{{"type", "video"}}}).message(),
            "content[0].type must be one of text, image_url, image; got \"video\"");
  EXPECT_EQ(bad({{{"type", "image"}, {"image", "!!!"}}}).message(),
            "content[0].image is not valid base64");
  EXPECT_EQ(
      bad({{{"type", "image"}, {"image", "data:image/png;base64," + Base64Encode("hello world")}}})
          .message(),
      "content[0].image is not a PNG, JPEG, WebP or GIF image");
  EXPECT_EQ(bad({{{"type", "image_url"}, {"image_url", {{"url", "https://x/y.png"}}}}}).code(),
            StatusCode::kInvalidParameter);
  EXPECT_EQ(bad({{{"type", "text"}, {"text", "  "}}}).message(),
            "content has no text and no image");
  ContentLimits tiny{.max_image_bytes = 4};
  auto big =
      ParseContentParts({{{"type", "image"}, {"image", Base64Encode(kPng)}}}, "c", tiny, &images);
  EXPECT_EQ(big.status().code(), StatusCode::kPayloadTooLarge);
}

}  // namespace
}  // namespace engram
