// The MCP endpoint: how many Streamable HTTP sessions live at once, per key and per client address,
// and how many messages one batch may carry.
#include "config/settings/settings.h"

namespace engram {

std::vector<OptionSpec> McpSettings() {
  // clang-format off
  return {
      {.name = "mcp-max-sessions", .field = &ServeOptions::mcp_max_sessions, .help = "live MCP sessions; at the limit a new one gets 503 unless one has expired", .tier = OptionTier::kAdvanced, .min = 1, .max = 10000000},
      {.name = "mcp-sessions-per-key", .field = &ServeOptions::mcp_sessions_per_key, .help = "MCP sessions one API key holds; a new one beyond ends that key's least recently used session", .tier = OptionTier::kAdvanced, .min = 1, .max = 10000000},
      {.name = "mcp-sessions-per-client", .field = &ServeOptions::mcp_sessions_per_client, .help = "MCP sessions one client address holds; a new one beyond ends that address's least recently used session", .tier = OptionTier::kAdvanced, .min = 1, .max = 10000000},
      {.name = "mcp-max-batch", .field = &ServeOptions::mcp_max_batch, .help = "messages one MCP JSON-RPC batch may hold (revision 2025-03-26); more: -32600", .tier = OptionTier::kAdvanced, .min = 1, .max = 10000},
  };
  // clang-format on
}

}  // namespace engram
