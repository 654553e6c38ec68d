#include "mcp/stdio_loop.h"

#include "common/json_reader.h"
#include "mcp/json_rpc.h"

namespace engram::mcp {

namespace {

// Reads one line of at most `max` bytes into *line; *too_long when more were skipped.
bool ReadLine(std::istream& in, size_t max, std::string* line, bool* too_long) {
  line->clear();
  *too_long = false;
  std::streambuf* buf = in.rdbuf();
  bool any = false;
  while (true) {
    const int c = buf->sbumpc();
    if (c == std::char_traits<char>::eof()) {
      in.setstate(std::ios::eofbit);
      return any;
    }
    any = true;
    if (c == '\n') return true;
    if (line->size() < max) {
      line->push_back(static_cast<char>(c));
    } else {
      *too_long = true;
    }
  }
}

}  // namespace

size_t RunStdioLoop(std::istream& in, std::ostream& out, const LineHandler& handle,
                    StdioLoopOptions options) {
  size_t handled = 0;
  std::string line;
  bool too_long = false;
  while (ReadLine(in, options.max_line_bytes, &line, &too_long)) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    std::vector<std::string> answers;
    if (too_long) {
      answers.push_back(
          DumpJson(ErrorResponse(nullptr, kParseError,
                                 "Parse error: message longer than " +
                                     std::to_string(options.max_line_bytes) + " bytes")));
    } else if (line.find_first_not_of(" \t") == std::string::npos) {
      continue;
    } else {
      answers = handle(line);
      ++handled;
    }
    for (const std::string& a : answers) out << a << '\n';
    out.flush();
  }
  return handled;
}

}  // namespace engram::mcp
