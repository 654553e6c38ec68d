// `engram mcp`: MCP over stdin/stdout for hosts that launch a command (Claude Desktop, Cursor,
// ...), relayed to a running `engram serve` (http_relay.h says why a relay). stdout carries only
// MCP messages; logs go to stderr.
#pragma once

#include "mcp/http_relay.h"

namespace engram::mcp {

// Runs until stdin ends; returns the process exit code (1 when the options are unusable).
int RunMcpStdio(HttpRelayOptions options);

}  // namespace engram::mcp
