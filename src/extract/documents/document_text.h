// Document text extraction for knowledge bases: the type of a document is detected from its
// content (magic bytes, then sniffing; the file name's extension only breaks ties between text
// formats), and the document is turned into plain UTF-8 text in a light Markdown shape that the
// chunker understands: "# " heading lines and paragraphs separated by blank lines.
//
// Formats: txt, md, html (libxml2, never touches the network), pdf (the `pdftotext` program of
// poppler-utils in a subprocess with a timeout and an output limit, so a hostile PDF can neither
// crash nor hang the server), docx (libarchive + pugixml, with a limit on the uncompressed size),
// csv and json.
//
// Errors: kInvalidParameter with a message fit for a document's error_message (unsupported type,
// parse failure, too large). Thread-safety: pure functions, safe to call concurrently.
#pragma once

#include <chrono>
#include <cstddef>
#include <string>
#include <string_view>

#include "common/status.h"

namespace engram {

enum class DocType { kText, kMarkdown, kHtml, kPdf, kDocx, kCsv, kJson };

const char* DocTypeName(DocType type);

struct DocumentLimits {
  size_t max_text_bytes = 32u << 20;      // extracted text
  size_t max_docx_xml_bytes = 64u << 20;  // uncompressed word/document.xml
  size_t max_archive_entries = 10000;     // entries scanned in a DOCX
  std::string pdftotext_path = "/usr/bin/pdftotext";
  std::chrono::milliseconds pdf_timeout{30000};
  size_t pdf_max_memory_bytes = 1ull << 30;  // address-space limit of the subprocess
};

// The type of `bytes`; `name` (a file name or URL) only decides between plain-text formats.
// kInvalidParameter for binary content of no supported type (images, archives, executables).
Result<DocType> DetectDocType(std::string_view bytes, std::string_view name);

// The document's text (see the header comment for its shape).
Result<std::string> ExtractDocumentText(DocType type, std::string_view bytes,
                                        const DocumentLimits& limits);

// Format-specific extractors (document_text.cc, html_text.cc, docx_text.cc, pdf_text.cc).
Result<std::string> HtmlToText(std::string_view html, const DocumentLimits& limits);
Result<std::string> DocxToText(std::string_view docx, const DocumentLimits& limits);
Result<std::string> PdfToText(std::string_view pdf, const DocumentLimits& limits);
Result<std::string> CsvToText(std::string_view csv, const DocumentLimits& limits);
Result<std::string> JsonToText(std::string_view json, const DocumentLimits& limits);

}  // namespace engram
