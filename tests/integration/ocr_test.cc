// Text from images: a word shown only in an image added through /leaderboard/add is found by a
// search, the image comes back unchanged, and a corrupt image never fails the add.
#include <stdlib.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <sstream>

#include "common/codec.h"
#include "test_util.h"

namespace engram::testing {
namespace {

using nlohmann::json;

// A PNG showing `text`, rendered by ImageMagick with a Debian font; empty when unavailable.
std::string RenderPng(const std::string& text) {
  char templ[] = "/tmp/engram-ocr-it-XXXXXX.png";
  const int fd = mkstemps(templ, 4);
  if (fd < 0) return "";
  close(fd);
  const std::string cmd =
      "convert -font /usr/share/fonts/truetype/dejavu/DejaVuSans.ttf -pointsize 48 -background "
      "white "
      "-fill black label:'" +
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

// One turn per result: the image's own turn is what the test looks for.
class OcrTest : public SharedServerTest {
 protected:
  ServerOptions Options() const override {
    return {.extra_args = {"--leaderboard-results", "turns"}};
  }
};

TEST_F(OcrTest, WordShownOnlyInAnImageIsFound) {
  ENGRAM_REQUIRE_BINARY();
  const std::string png = RenderPng("pelican lighthouse");
  if (png.empty()) GTEST_SKIP() << "ImageMagick convert with DejaVu fonts is not available";
  const std::string user = UniqueId("eval:run:ocr:user");
  const std::string caption = "A photo from my holiday.";
  std::string corrupt = TinyPngBytes();
  corrupt.resize(30);  // PNG magic, truncated: its OCR fails, the add does not
  json messages = json::array(
      {Message(json::array({{{"type", "text"}, {"text", caption}}, ImagePart(png)}), 1704067200000),
       Message(json::array({{{"type", "text"}, {"text", "A broken picture."}}, ImagePart(corrupt)}),
               1704067260000)});
  json body = AddBody(UniqueId("eval:run:ocr:chunk"), user, "s-ocr", messages);
  HttpResponse add = client().Post(kAddPath, body);
  ASSERT_TRUE(IsAddSuccess(add, body)) << add.Describe();

  json data = SearchData(client(), user, "lighthouse", 10);
  ASSERT_FALSE(data.empty());
  const json& first = data[0];
  ASSERT_TRUE(first["content"].is_array()) << first.dump().substr(0, 300);
  const std::string text = ContentText(first["content"]);
  EXPECT_NE(text.find(caption), std::string::npos) << text;
  // The OCR text is indexed, not shown: content is what the client sent.
  EXPECT_EQ(text.find("lighthouse"), std::string::npos) << text;
  int images = 0;
  for (const auto& part : first["content"]) {
    if (part.value("type", "") != "image_url") continue;
    const std::string url = part["image_url"].value("url", "");
    EXPECT_EQ(Base64Decode(url.substr(url.find(',') + 1)), png) << "image bytes changed";
    ++images;
  }
  EXPECT_EQ(images, 1);
  // The message with the corrupt image was stored and is found by its own text.
  EXPECT_EQ(CountContaining(SearchData(client(), user, "broken picture", 10), "A broken picture."),
            1);
}

}  // namespace
}  // namespace engram::testing
