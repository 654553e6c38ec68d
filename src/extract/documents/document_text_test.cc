#include "extract/documents/document_text.h"

#include <gtest/gtest.h>

#include "test_documents.h"

namespace engram {
namespace {

using testing::MakeDocx;
using testing::MakeDocxBomb;
using testing::MakePdf;
using testing::MakeZip;

std::string Extract(std::string_view bytes, std::string_view name, DocType expected,
                    const DocumentLimits& limits = {}) {
  auto type = DetectDocType(bytes, name);
  EXPECT_TRUE(type.ok()) << type.status().ToString();
  if (!type.ok()) return "";
  EXPECT_EQ(*type, expected) << DocTypeName(*type);
  auto text = ExtractDocumentText(*type, bytes, limits);
  EXPECT_TRUE(text.ok()) << text.status().ToString();
  return text.ok() ? *text : "";
}

TEST(DocumentTextTest, DetectsTypesFromContentNotOnlyTheName) {
  EXPECT_EQ(*DetectDocType(MakePdf({"x"}), "report.txt"), DocType::kPdf);
  EXPECT_EQ(*DetectDocType(MakeDocx({"x"}), "notes.bin"), DocType::kDocx);
  EXPECT_EQ(*DetectDocType("<!DOCTYPE html><html><body>x</body></html>", "a.txt"), DocType::kHtml);
  EXPECT_EQ(*DetectDocType("{\"a\": 1}", "data"), DocType::kJson);
  EXPECT_EQ(*DetectDocType("a,b\n1,2\n", "t.csv"), DocType::kCsv);
  EXPECT_EQ(*DetectDocType("# Title\n\ntext", "r.md"), DocType::kMarkdown);
  EXPECT_EQ(*DetectDocType("plain words", "r"), DocType::kText);
  EXPECT_FALSE(DetectDocType("\x89PNG\r\n\x1a\n....", "a.txt").ok());
  EXPECT_FALSE(DetectDocType(MakeZip({{"a.txt", "x"}}), "a.zip").ok());
  EXPECT_FALSE(DetectDocType("plain text", "fake.pdf").ok());
  EXPECT_FALSE(DetectDocType(std::string("bin\0ary", 7), "x").ok());
}

TEST(DocumentTextTest, Html) {
  std::string text = Extract(
      "<html><head><title>T</title><style>p{}</style><script>var secret=1;</script></head>"
      "<body><h1>Main heading</h1><p>First <b>bold</b> paragraph.</p><div>Second</div>"
      "<table><tr><td>c1</td><td>c2</td></tr></table></body></html>",
      "page.html", DocType::kHtml);
  EXPECT_NE(text.find("# Main heading"), std::string::npos) << text;
  EXPECT_NE(text.find("First bold paragraph."), std::string::npos) << text;
  EXPECT_NE(text.find("Second"), std::string::npos) << text;
  EXPECT_NE(text.find("c1 c2"), std::string::npos) << text;
  EXPECT_EQ(text.find("secret"), std::string::npos) << text;
}

TEST(DocumentTextTest, HtmlExternalEntitiesAreNeverLoaded) {
  std::string text = Extract(
      "<!DOCTYPE html [<!ENTITY xxe SYSTEM \"file:///etc/passwd\">]><html><body><p>safe &xxe; "
      "text</p><img src=\"http://127.0.0.1:1/x.png\"></body></html>",
      "x.html", DocType::kHtml);
  EXPECT_NE(text.find("safe"), std::string::npos) << text;
  EXPECT_EQ(text.find("root:"), std::string::npos) << text;
}

TEST(DocumentTextTest, Docx) {
  std::string text = Extract(MakeDocx({"# Chapter One", "The quick brown fox.", "Jumps & runs."}),
                             "a.docx", DocType::kDocx);
  EXPECT_NE(text.find("# Chapter One"), std::string::npos) << text;
  EXPECT_NE(text.find("The quick brown fox."), std::string::npos) << text;
  EXPECT_NE(text.find("Jumps & runs."), std::string::npos) << text;
}

TEST(DocumentTextTest, DocxZipBombStopsAtTheLimit) {
  DocumentLimits limits;
  limits.max_docx_xml_bytes = 1 << 20;
  auto text = DocxToText(MakeDocxBomb(50u << 20), limits);
  ASSERT_FALSE(text.ok());
  EXPECT_NE(text.status().message().find("too large"), std::string::npos)
      << text.status().message();
}

TEST(DocumentTextTest, CorruptDocxFails) {
  std::string docx = MakeDocx({"hello"});
  docx.resize(docx.size() / 2);
  EXPECT_FALSE(DocxToText(docx, {}).ok());
}

TEST(DocumentTextTest, Pdf) {
  std::string text = Extract(MakePdf({"Quarterly revenue grew strongly.", "Second line here."}),
                             "r.pdf", DocType::kPdf);
  EXPECT_NE(text.find("Quarterly revenue grew strongly."), std::string::npos) << text;
  EXPECT_NE(text.find("Second line here."), std::string::npos) << text;
}

TEST(DocumentTextTest, CorruptPdfFailsWithAMessage) {
  auto text = PdfToText("%PDF-1.4\n1 0 obj garbage\n%%EOF", {});
  ASSERT_FALSE(text.ok());
  EXPECT_EQ(text.status().code(), StatusCode::kInvalidParameter) << text.status().ToString();
}

TEST(DocumentTextTest, MissingPdftotextIsReported) {
  DocumentLimits limits;
  limits.pdftotext_path = "/nonexistent/pdftotext";
  auto text = PdfToText(MakePdf({"x"}), limits);
  ASSERT_FALSE(text.ok());
  EXPECT_NE(text.status().message().find("pdftotext"), std::string::npos);
}

TEST(DocumentTextTest, CsvRowsKeepTheirColumnNames) {
  std::string text =
      Extract("name,city\nAlice,\"Paris, France\"\nBob,Oslo\n", "p.csv", DocType::kCsv);
  EXPECT_NE(text.find("name: Alice; city: Paris, France"), std::string::npos) << text;
  EXPECT_NE(text.find("name: Bob; city: Oslo"), std::string::npos) << text;
}

TEST(DocumentTextTest, JsonIsFlattenedToPaths) {
  std::string text = Extract(R"({"team": {"lead": "Carol", "size": 5}, "tags": ["a", "b"]})",
                             "d.json", DocType::kJson);
  EXPECT_NE(text.find("team.lead: Carol"), std::string::npos) << text;
  EXPECT_NE(text.find("team.size: 5"), std::string::npos) << text;
  EXPECT_NE(text.find("tags[1]: b"), std::string::npos) << text;
}

TEST(DocumentTextTest, NulCharactersAreDroppedFromExtractedText) {
  std::string text = Extract(R"({"note": "tea\u0000time"})", "n.json", DocType::kJson);
  EXPECT_EQ(text.find('\0'), std::string::npos);
  EXPECT_NE(text.find("note: teatime"), std::string::npos) << text;
}

TEST(DocumentTextTest, DeepJsonIsRefused) {
  std::string deep(100000, '[');
  EXPECT_FALSE(JsonToText(deep, {}).ok());
}

TEST(DocumentTextTest, BlankDocumentFails) {
  EXPECT_FALSE(ExtractDocumentText(DocType::kText, "   \n\n", {}).ok());
}

}  // namespace
}  // namespace engram
