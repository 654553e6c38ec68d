// DOCX → text: libarchive reads word/document.xml out of the ZIP (the bytes actually inflated are
// counted, never the sizes the archive claims, so a zip bomb stops at the limit), pugixml parses
// it (it expands no DTD entities). Paragraphs become lines; Heading/Title styles "# " lines;
// table cells are separated by tabs.
#include <archive.h>
#include <archive_entry.h>
#include <fmt/format.h>

#include <cstring>
#include <memory>
#include <pugixml.hpp>

#include "extract/documents/document_text.h"

namespace engram {

namespace {

struct ArchiveFree {
  void operator()(archive* a) const { archive_read_free(a); }
};

// The uncompressed bytes of `wanted`; kInvalidParameter when absent, unreadable or too large.
Result<std::string> ReadZipEntry(std::string_view zip, const char* wanted,
                                 const DocumentLimits& limits) {
  std::unique_ptr<archive, ArchiveFree> a(archive_read_new());
  if (!a) return Status::Internal("libarchive: out of memory");
  archive_read_support_format_zip(a.get());
  if (archive_read_open_memory(a.get(), zip.data(), zip.size()) != ARCHIVE_OK) {
    return Status::InvalidParameter("DOCX could not be opened as a ZIP archive");
  }
  archive_entry* entry = nullptr;
  for (size_t seen = 0;; ++seen) {
    if (seen >= limits.max_archive_entries) {
      return Status::InvalidParameter(
          fmt::format("DOCX has too many entries (more than {})", limits.max_archive_entries));
    }
    const int rc = archive_read_next_header(a.get(), &entry);
    if (rc == ARCHIVE_EOF) break;
    if (rc != ARCHIVE_OK && rc != ARCHIVE_WARN) {
      return Status::InvalidParameter("DOCX is not a readable ZIP archive");
    }
    const char* name = archive_entry_pathname(entry);
    if (name == nullptr || std::strcmp(name, wanted) != 0) continue;
    std::string out;
    char buf[64 * 1024];
    for (;;) {
      const la_ssize_t n = archive_read_data(a.get(), buf, sizeof(buf));
      if (n == 0) break;
      if (n < 0) return Status::InvalidParameter(fmt::format("DOCX entry {} is corrupt", wanted));
      out.append(buf, static_cast<size_t>(n));
      if (out.size() > limits.max_docx_xml_bytes) {
        return Status::InvalidParameter(
            fmt::format("DOCX is too large: {} expands to more than {} bytes (a zip bomb?)", wanted,
                        limits.max_docx_xml_bytes));
      }
    }
    return out;
  }
  return Status::InvalidParameter(fmt::format("DOCX has no {}", wanted));
}

bool IsHeadingStyle(const pugi::xml_node& paragraph) {
  const pugi::xml_node style = paragraph.child("w:pPr").child("w:pStyle");
  const std::string_view val = style.attribute("w:val").as_string();
  return val.rfind("Heading", 0) == 0 || val.rfind("heading", 0) == 0 || val == "Title";
}

void AppendRunText(const pugi::xml_node& node, std::string* out) {
  // Depth-first over the paragraph: text runs, tabs and breaks in order.
  for (pugi::xml_node n = node.first_child(); n; n = n.next_sibling()) {
    const std::string_view name = n.name();
    if (name == "w:t") {
      *out += n.text().get();
    } else if (name == "w:tab") {
      *out += '\t';
    } else if (name == "w:br" || name == "w:cr") {
      *out += '\n';
    } else if (name == "w:delText" || name == "w:instrText") {
      // Deleted revisions and field codes are not part of the visible text.
    } else {
      AppendRunText(n, out);
    }
  }
}

class BodyWalker : public pugi::xml_tree_walker {
 public:
  BodyWalker(std::string* out, size_t limit) : out_(out), limit_(limit) {}
  bool for_each(pugi::xml_node& node) override {
    const std::string_view name = node.name();
    if (name == "w:p") {
      // Paragraphs nested in a paragraph (text boxes) are reached through the outer one.
      for (pugi::xml_node p = node.parent(); p; p = p.parent()) {
        if (std::string_view(p.name()) == "w:p") return true;
      }
      std::string text;
      AppendRunText(node, &text);
      const bool in_cell = std::string_view(node.parent().name()) == "w:tc";
      if (IsHeadingStyle(node) && !text.empty()) {
        *out_ += "\n# " + text + "\n\n";
      } else if (in_cell) {
        *out_ += text + "\t";
      } else {
        *out_ += text + "\n\n";
      }
    } else if (name == "w:tr") {
      *out_ += '\n';
    }
    return out_->size() <= limit_;
  }

 private:
  std::string* out_;
  size_t limit_;
};

}  // namespace

Result<std::string> DocxToText(std::string_view docx, const DocumentLimits& limits) {
  auto xml = ReadZipEntry(docx, "word/document.xml", limits);
  if (!xml.ok()) return xml.status();
  pugi::xml_document doc;
  // parse_default without DOCTYPE processing beyond skipping it; pugixml never loads entities.
  const pugi::xml_parse_result parsed =
      doc.load_buffer_inplace(xml->data(), xml->size(), pugi::parse_default, pugi::encoding_utf8);
  if (!parsed) {
    return Status::InvalidParameter(
        fmt::format("DOCX word/document.xml could not be parsed: {}", parsed.description()));
  }
  pugi::xml_node body = doc.child("w:document").child("w:body");
  if (!body) return Status::InvalidParameter("DOCX word/document.xml has no w:body");
  std::string out;
  BodyWalker walker(&out, limits.max_text_bytes);
  body.traverse(walker);
  if (out.size() > limits.max_text_bytes) {
    return Status::InvalidParameter(
        fmt::format("extracted text is too large: more than {} bytes", limits.max_text_bytes));
  }
  return out;
}

}  // namespace engram
