#include "mcp/stdio_loop.h"

#include <gtest/gtest.h>

#include <sstream>

namespace engram::mcp {
namespace {

TEST(StdioLoopTest, AnswersEachLineAndSkipsBlankOnes) {
  std::istringstream in("one\r\n\n  \ntwo\nthree");
  std::ostringstream out;
  std::vector<std::string> seen;
  const size_t n = RunStdioLoop(in, out, [&](const std::string& line) {
    seen.push_back(line);
    if (line == "two") return std::vector<std::string>{};  // a notification
    return std::vector<std::string>{"<" + line + ">"};
  });
  EXPECT_EQ(n, 3u);
  EXPECT_EQ(seen, (std::vector<std::string>{"one", "two", "three"}));
  EXPECT_EQ(out.str(), "<one>\n<three>\n");
}

TEST(StdioLoopTest, AnOverlongLineIsAParseErrorAndTheNextLineStillWorks) {
  std::istringstream in(std::string(100, 'x') + "\nok\n");
  std::ostringstream out;
  RunStdioLoop(in, out, [](const std::string& line) { return std::vector<std::string>{line}; },
               {.max_line_bytes = 10});
  EXPECT_NE(out.str().find("\"code\":-32700"), std::string::npos);
  EXPECT_NE(out.str().find("\nok\n"), std::string::npos);
}

}  // namespace
}  // namespace engram::mcp
