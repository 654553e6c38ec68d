// The stdio transport's framing: newline-delimited JSON-RPC messages on an input stream, answers
// written one per line to an output stream (stdout carries nothing else; logs go to stderr).
//
// Thread-safety: RunStdioLoop runs on the calling thread and calls `handle` there, one line at a
// time, in order. Ownership: the streams are borrowed for the call.
#pragma once

#include <functional>
#include <istream>
#include <ostream>
#include <string>
#include <vector>

namespace engram::mcp {

// Answers one received line with the lines to write (none for a notification).
using LineHandler = std::function<std::vector<std::string>(const std::string& line)>;

struct StdioLoopOptions {
  // A longer line is not handed to `handle`: it is skipped and answered with a parse error.
  size_t max_line_bytes = 16 << 20;
};

// Reads lines until end of input; blank lines are ignored and a trailing "\r" is dropped. Each
// answer is written with a "\n" and flushed at once (the peer waits for it). Returns the number
// of lines handled.
size_t RunStdioLoop(std::istream& in, std::ostream& out, const LineHandler& handle,
                    StdioLoopOptions options = {});

}  // namespace engram::mcp
