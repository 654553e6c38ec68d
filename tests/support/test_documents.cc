#include "test_documents.h"

#include <archive.h>
#include <archive_entry.h>

#include <cstdio>
#include <memory>
#include <stdexcept>

namespace engram::testing {

std::string MakeZip(const std::vector<std::pair<std::string, std::string>>& entries) {
  std::unique_ptr<archive, decltype(&archive_write_free)> a(archive_write_new(),
                                                            archive_write_free);
  archive_write_set_format_zip(a.get());
  archive_write_zip_set_compression_deflate(a.get());
  // Large enough for the bombs the tests build (deflate of repeated bytes is ~1000:1).
  std::string buffer(16u << 20, '\0');
  size_t used = 0;
  if (archive_write_open_memory(a.get(), buffer.data(), buffer.size(), &used) != ARCHIVE_OK) {
    throw std::runtime_error("archive_write_open_memory failed");
  }
  for (const auto& [name, content] : entries) {
    std::unique_ptr<archive_entry, decltype(&archive_entry_free)> e(archive_entry_new(),
                                                                    archive_entry_free);
    archive_entry_set_pathname(e.get(), name.c_str());
    archive_entry_set_filetype(e.get(), AE_IFREG);
    archive_entry_set_perm(e.get(), 0644);
    archive_entry_set_size(e.get(), static_cast<la_int64_t>(content.size()));
    archive_write_header(a.get(), e.get());
    size_t off = 0;
    while (off < content.size()) {
      const size_t n = std::min<size_t>(content.size() - off, 1 << 20);
      archive_write_data(a.get(), content.data() + off, n);
      off += n;
    }
  }
  archive_write_close(a.get());
  buffer.resize(used);
  return buffer;
}

namespace {

constexpr char kContentTypes[] =
    R"(<?xml version="1.0" encoding="UTF-8" standalone="yes"?>
<Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types"><Default Extension="xml" ContentType="application/xml"/><Override PartName="/word/document.xml" ContentType="application/vnd.openxmlformats-officedocument.wordprocessingml.document.main+xml"/></Types>)";

std::string XmlEscape(const std::string& s) {
  std::string out;
  for (char c : s) {
    if (c == '<')
      out += "&lt;";
    else if (c == '>')
      out += "&gt;";
    else if (c == '&')
      out += "&amp;";
    else
      out += c;
  }
  return out;
}

}  // namespace

std::string MakeDocx(const std::vector<std::string>& paragraphs) {
  std::string body;
  for (const std::string& p : paragraphs) {
    if (p.rfind("# ", 0) == 0) {
      body += "<w:p><w:pPr><w:pStyle w:val=\"Heading1\"/></w:pPr><w:r><w:t>" +
              XmlEscape(p.substr(2)) + "</w:t></w:r></w:p>";
    } else {
      body += "<w:p><w:r><w:t xml:space=\"preserve\">" + XmlEscape(p) + "</w:t></w:r></w:p>";
    }
  }
  std::string document =
      "<?xml version=\"1.0\" encoding=\"UTF-8\" standalone=\"yes\"?>\n"
      "<w:document xmlns:w=\"http://schemas.openxmlformats.org/wordprocessingml/2006/main\">"
      "<w:body>" +
      body + "</w:body></w:document>";
  return MakeZip({{"[Content_Types].xml", kContentTypes}, {"word/document.xml", document}});
}

std::string MakeDocxBomb(size_t uncompressed_bytes) {
  std::string document =
      "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<w:document "
      "xmlns:w=\"http://schemas.openxmlformats.org/wordprocessingml/2006/"
      "main\"><w:body><w:p><w:r><w:t>";
  document.append(uncompressed_bytes, 'a');
  document += "</w:t></w:r></w:p></w:body></w:document>";
  return MakeZip({{"[Content_Types].xml", kContentTypes}, {"word/document.xml", document}});
}

std::string MakePdf(const std::vector<std::string>& lines) {
  std::string stream = "BT /F1 14 Tf 72 720 Td 18 TL\n";
  for (const std::string& line : lines) {
    std::string escaped;
    for (char c : line) {
      if (c == '(' || c == ')' || c == '\\') escaped += '\\';
      escaped += c;
    }
    stream += "(" + escaped + ") Tj T*\n";
  }
  stream += "ET\n";
  const std::vector<std::string> objects = {
      "<< /Type /Catalog /Pages 2 0 R >>",
      "<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
      "<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 4 0 R "
      "/Resources << /Font << /F1 5 0 R >> >> >>",
      "<< /Length " + std::to_string(stream.size()) + " >>\nstream\n" + stream + "endstream",
      "<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>",
  };
  std::string pdf = "%PDF-1.4\n";
  std::vector<size_t> offsets;
  for (size_t i = 0; i < objects.size(); ++i) {
    offsets.push_back(pdf.size());
    pdf += std::to_string(i + 1) + " 0 obj\n" + objects[i] + "\nendobj\n";
  }
  const size_t xref = pdf.size();
  pdf += "xref\n0 " + std::to_string(objects.size() + 1) + "\n0000000000 65535 f \n";
  for (size_t off : offsets) {
    char row[32];
    std::snprintf(row, sizeof(row), "%010zu 00000 n \n", off);
    pdf += row;
  }
  pdf += "trailer\n<< /Size " + std::to_string(objects.size() + 1) +
         " /Root 1 0 R >>\nstartxref\n" + std::to_string(xref) + "\n%%EOF\n";
  return pdf;
}

}  // namespace engram::testing
