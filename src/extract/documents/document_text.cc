// Type detection, the plain-text formats (txt, md, csv, json) and the dispatch to the others.
#include "extract/documents/document_text.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <nlohmann/json.hpp>
#include <vector>

#include "common/json_reader.h"

namespace engram {

namespace {

bool StartsWith(std::string_view s, std::string_view prefix) {
  return s.size() >= prefix.size() && s.compare(0, prefix.size(), prefix) == 0;
}

std::string LowerExtension(std::string_view name) {
  // Query strings and fragments of URLs are not part of the file name.
  name = name.substr(0, name.find_first_of("?#"));
  const size_t slash = name.find_last_of('/');
  if (slash != std::string_view::npos) name = name.substr(slash + 1);
  const size_t dot = name.find_last_of('.');
  if (dot == std::string_view::npos) return "";
  std::string ext(name.substr(dot + 1));
  for (char& c : ext) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return ext;
}

bool ValidUtf8(std::string_view s) {
  size_t i = 0;
  while (i < s.size()) {
    const auto c = static_cast<unsigned char>(s[i]);
    size_t n = c < 0x80 ? 1 : (c >> 5) == 0x6 ? 2 : (c >> 4) == 0xE ? 3 : (c >> 3) == 0x1E ? 4 : 0;
    if (n == 0 || i + n > s.size()) return false;
    for (size_t k = 1; k < n; ++k) {
      if ((static_cast<unsigned char>(s[i + k]) & 0xC0) != 0x80) return false;
    }
    i += n;
  }
  return true;
}

std::string_view StripBom(std::string_view s) {
  return StartsWith(s, "\xEF\xBB\xBF") ? s.substr(3) : s;
}

// Text with CRLF / CR line ends made LF and NULs dropped.
std::string NormalizeText(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '\r') {
      out += '\n';
      if (i + 1 < s.size() && s[i + 1] == '\n') ++i;
    } else if (s[i] != '\0') {
      out += s[i];
    }
  }
  return out;
}

std::string LowerPrefix(std::string_view s, size_t n) {
  std::string out(s.substr(0, std::min(n, s.size())));
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

bool LooksLikeHtml(std::string_view text) {
  std::string head = LowerPrefix(text, 2048);
  const size_t start = head.find_first_not_of(" \t\n\r");
  if (start == std::string::npos) return false;
  head = head.substr(start);
  return StartsWith(head, "<!doctype html") || StartsWith(head, "<html") ||
         StartsWith(head, "<head") || StartsWith(head, "<body") ||
         (head[0] == '<' &&
          (head.find("<body") != std::string::npos || head.find("<p>") != std::string::npos ||
           head.find("<div") != std::string::npos));
}

bool LooksLikeJson(std::string_view text) {
  const size_t start = text.find_first_not_of(" \t\n\r");
  if (start == std::string_view::npos || (text[start] != '{' && text[start] != '[')) return false;
  // Sniffing only: nlohmann's acceptor is the iterative SAX parser and builds nothing, so it needs
  // no depth bound. Text that looks like JSON but breaks JsonToText's limits is then refused with
  // the reason, rather than being taken for plain text.
  return nlohmann::json::accept(text);
}

void FlattenJson(const nlohmann::json& j, const std::string& path, std::string* out) {
  if (j.is_object()) {
    for (auto it = j.begin(); it != j.end(); ++it) {
      FlattenJson(*it, path.empty() ? it.key() : path + "." + it.key(), out);
    }
  } else if (j.is_array()) {
    for (size_t i = 0; i < j.size(); ++i) {
      FlattenJson(j[i], fmt::format("{}[{}]", path, i), out);
      // Elements of a top-level array are records of their own: one paragraph each.
      if (path.empty()) *out += '\n';
    }
  } else {
    if (!path.empty()) *out += path + ": ";
    *out += j.is_string() ? j.get<std::string>()
                          : j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
    *out += '\n';
  }
}

// One CSV record's fields (RFC 4180 quoting); advances *pos past the record.
std::vector<std::string> ReadCsvRecord(std::string_view s, size_t* pos) {
  std::vector<std::string> fields(1);
  bool quoted = false;
  size_t i = *pos;
  for (; i < s.size(); ++i) {
    const char c = s[i];
    if (quoted) {
      if (c == '"') {
        if (i + 1 < s.size() && s[i + 1] == '"') {
          fields.back() += '"';
          ++i;
        } else {
          quoted = false;
        }
      } else {
        fields.back() += c;
      }
    } else if (c == '"') {
      quoted = true;
    } else if (c == ',') {
      fields.emplace_back();
    } else if (c == '\n') {
      ++i;
      break;
    } else {
      fields.back() += c;
    }
  }
  *pos = i;
  return fields;
}

Status TooLarge(size_t bytes, const DocumentLimits& limits) {
  return Status::InvalidParameter(fmt::format(
      "extracted text is too large: more than {} bytes (limit {})", bytes, limits.max_text_bytes));
}

}  // namespace

const char* DocTypeName(DocType type) {
  switch (type) {
    case DocType::kText:
      return "txt";
    case DocType::kMarkdown:
      return "md";
    case DocType::kHtml:
      return "html";
    case DocType::kPdf:
      return "pdf";
    case DocType::kDocx:
      return "docx";
    case DocType::kCsv:
      return "csv";
    case DocType::kJson:
      return "json";
  }
  return "unknown";
}

Result<DocType> DetectDocType(std::string_view bytes, std::string_view name) {
  const std::string ext = LowerExtension(name);
  // Binary formats are told by their magic bytes, whatever the name says.
  if (StartsWith(bytes, "%PDF-")) return DocType::kPdf;
  if (StartsWith(bytes, "PK\x03\x04")) {
    // A DOCX names word/document.xml in its central directory (and usually first).
    if (bytes.find("word/document.xml") != std::string_view::npos) return DocType::kDocx;
    return Status::InvalidParameter("unsupported document type: a ZIP archive that is not a DOCX");
  }
  struct Magic {
    std::string_view prefix;
    const char* what;
  };
  static constexpr Magic kUnsupported[] = {
      {"\x89PNG", "a PNG image"},
      {"\xFF\xD8\xFF", "a JPEG image"},
      {"GIF8", "a GIF image"},
      {"\x7F"
       "ELF",
       "an executable"},
      {"\x1F\x8B", "a gzip archive"},
      {"\xD0\xCF\x11\xE0", "a legacy Office (OLE) file"},
      {"Rar!", "a RAR archive"},
      {"7z\xBC\xAF", "a 7-Zip archive"},
  };
  for (const Magic& m : kUnsupported) {
    if (StartsWith(bytes, m.prefix)) {
      return Status::InvalidParameter(fmt::format("unsupported document type: {}", m.what));
    }
  }
  if (ext == "pdf") {
    return Status::InvalidParameter("the file is named .pdf but its content is not a PDF");
  }
  if (ext == "docx") {
    return Status::InvalidParameter("the file is named .docx but its content is not a DOCX (ZIP)");
  }
  const std::string_view text = StripBom(bytes);
  if (text.find('\0') != std::string_view::npos || !ValidUtf8(text)) {
    return Status::InvalidParameter(
        "unsupported document type: binary content (text documents must be UTF-8)");
  }
  if (ext == "json" || LooksLikeJson(text)) return DocType::kJson;
  if (ext == "html" || ext == "htm" || ext == "xhtml" || LooksLikeHtml(text)) return DocType::kHtml;
  if (ext == "csv") return DocType::kCsv;
  if (ext == "md" || ext == "markdown") return DocType::kMarkdown;
  return DocType::kText;
}

Result<std::string> CsvToText(std::string_view csv, const DocumentLimits& limits) {
  const std::string text = NormalizeText(StripBom(csv));
  std::string out;
  size_t pos = 0;
  std::vector<std::string> header = ReadCsvRecord(text, &pos);
  while (pos < text.size()) {
    std::vector<std::string> row = ReadCsvRecord(text, &pos);
    if (row.size() == 1 && row[0].empty()) continue;  // blank line
    // Each row becomes "column: value; …", so a chunk read alone still says what a value means.
    std::string line;
    for (size_t i = 0; i < row.size(); ++i) {
      if (row[i].empty()) continue;
      if (!line.empty()) line += "; ";
      if (i < header.size() && !header[i].empty()) line += header[i] + ": ";
      line += row[i];
    }
    out += line;
    out += '\n';
    if (out.size() > limits.max_text_bytes) return TooLarge(out.size(), limits);
  }
  if (out.empty()) {  // a header only: keep it as the text
    for (const auto& h : header) out += h + (h.empty() ? "" : " ");
  }
  return out;
}

Result<std::string> JsonToText(std::string_view json_text, const DocumentLimits& limits) {
  const std::string_view text = StripBom(json_text);
  // Documents are data, not requests: duplicate keys and NUL characters are kept as nlohmann
  // always kept them (NULs are dropped from the text later). The depth bound keeps FlattenJson's
  // recursion short; the size bound keeps the DOM's memory in proportion to the text limit (keys
  // and syntax take room, so four times it).
  const JsonReadLimits json_limits{.what = "JSON document",
                                   .max_bytes = 4 * limits.max_text_bytes,
                                   .max_depth = 128,
                                   .refuse_duplicate_keys = false};
  auto j = ReadJson(text, json_limits);
  if (!j.ok()) return j.status();
  std::string out;
  FlattenJson(*j, "", &out);
  if (out.size() > limits.max_text_bytes) return TooLarge(out.size(), limits);
  return out;
}

Result<std::string> ExtractDocumentText(DocType type, std::string_view bytes,
                                        const DocumentLimits& limits) {
  Result<std::string> text = std::string();
  switch (type) {
    case DocType::kText:
    case DocType::kMarkdown:
      text = NormalizeText(StripBom(bytes));
      break;
    case DocType::kHtml:
      text = HtmlToText(bytes, limits);
      break;
    case DocType::kPdf:
      text = PdfToText(bytes, limits);
      break;
    case DocType::kDocx:
      text = DocxToText(bytes, limits);
      break;
    case DocType::kCsv:
      text = CsvToText(bytes, limits);
      break;
    case DocType::kJson:
      text = JsonToText(bytes, limits);
      break;
  }
  if (!text.ok()) return text;
  // Extracted text (a JSON "\u0000", a PDF's odd glyph) may hold NUL characters: they carry no
  // meaning in text and no text store keeps them.
  text->erase(std::remove(text->begin(), text->end(), '\0'), text->end());
  if (text->size() > limits.max_text_bytes) return TooLarge(text->size(), limits);
  if (!ValidUtf8(*text)) {
    return Status::InvalidParameter(
        fmt::format("{} document's text is not valid UTF-8", DocTypeName(type)));
  }
  const bool blank = text->find_first_not_of(" \t\n\r\f") == std::string::npos;
  if (blank) {
    return Status::InvalidParameter(
        fmt::format("no text could be extracted from the {} document", DocTypeName(type)));
  }
  return text;
}

}  // namespace engram
