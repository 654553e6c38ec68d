#include "mcp/stdio_command.h"

#include <spdlog/spdlog.h>

#include <iostream>

#include "mcp/stdio_loop.h"

namespace engram::mcp {

int RunMcpStdio(HttpRelayOptions options) {
  auto relay = HttpRelay::Create(std::move(options));
  if (!relay.ok()) {
    spdlog::error("engram mcp: {}", relay.status().message());
    return 1;
  }
  spdlog::info("engram mcp: relaying stdio to {}", (*relay)->endpoint());
  std::ios::sync_with_stdio(false);
  const size_t handled = RunStdioLoop(
      std::cin, std::cout, [&relay](const std::string& line) { return (*relay)->Handle(line); });
  spdlog::info("engram mcp: input ended after {} messages", handled);
  return 0;
}

}  // namespace engram::mcp
