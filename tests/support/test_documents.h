// Real documents built by tests (knowledge-base ingestion): DOCX written with libarchive's ZIP
// writer, a minimal valid PDF written by hand, and hostile variants of both.
#pragma once

#include <string>
#include <vector>

namespace engram::testing {

// A ZIP archive holding the given (name, content) entries, deflated.
std::string MakeZip(const std::vector<std::pair<std::string, std::string>>& entries);

// A minimal DOCX; paragraphs starting with "# " get the Heading1 style (without the "# ").
std::string MakeDocx(const std::vector<std::string>& paragraphs);

// A DOCX whose word/document.xml inflates to `uncompressed_bytes` (a zip bomb).
std::string MakeDocxBomb(size_t uncompressed_bytes);

// A one-page PDF showing each line (ASCII only) in Helvetica, with a correct xref table.
std::string MakePdf(const std::vector<std::string>& lines);

}  // namespace engram::testing
