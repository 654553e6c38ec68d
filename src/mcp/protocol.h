// The MCP protocol engine, independent of the transport: version negotiation and the methods the
// server implements (initialize, ping, tools/list, tools/call; server/discover in the stateless
// revision; notifications are acknowledged).
//
// Session-based revisions: 2025-11-25 (latest), 2025-06-18 and 2025-03-26. An initialize asking
// for one of them is answered with it; any other is answered with the latest, and the client
// decides whether it can continue (lifecycle, "Version Negotiation").
// The stateless revision 2026-07-28 (stateless_request.h) has no initialize and no ping: each
// request names its revision, server/discover tells what the server serves, every result carries
// resultType "complete" and the server's identity in _meta, and list results say how long they
// may be cached (ttlMs, cacheScope). An unknown method is -32601 in every revision.
//
// Errors follow JSON-RPC: unknown methods -32601; a malformed initialize or tools/call (no
// name, arguments not an object) and unknown tools -32602; a tool that fails unexpectedly -32603.
// Arguments that break a tool's schema, and failures of the service, are tool results with
// isError (the spec's "tool execution errors"), so a model can read them and correct its call.
//
// Thread-safety: Handle and Initialize are safe to call concurrently. Ownership: does not own the
// tool registry, which must outlive it.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "mcp/json_rpc.h"
#include "mcp/tool_registry.h"

namespace engram::mcp {

// The newest revision an initialize negotiates.
inline constexpr std::string_view kLatestProtocolVersion = "2025-11-25";
// The session-based revisions, newest first.
const std::vector<std::string>& SupportedProtocolVersions();
bool IsSupportedProtocolVersion(std::string_view version);

// How long a client may keep the tool list (it changes only when the server is upgraded).
inline constexpr int64_t kToolListTtlMs = 300000;

struct ServerInfo {
  std::string name = "engram";
  std::string title = "Engram memory";
  std::string version = "0.0.0";
  // Sent to the client at initialize and server/discover, for the model: what the tools are for.
  std::string instructions;
};

class Protocol {
 public:
  Protocol(const ToolRegistry* tools, ServerInfo info);

  struct Initialized {
    nlohmann::json response;       // the JSON-RPC response to send
    std::string protocol_version;  // empty when the response is an error
  };
  // Answers an initialize request (`request.method` must be "initialize").
  Initialized Initialize(const Message& request) const;

  // Answers any other request (nullopt for notifications and responses, which need no answer).
  // `context` carries the workspace and the revision: the session's, or the one a stateless
  // request names.
  std::optional<nlohmann::json> Handle(const Message& message, const ToolContext& context) const;

  // Whether the message calls a tool that may wait: a write (not read-only: a store fsync, an
  // event to finish), or a read whose probe (Tool::ready) finds what it reads not loaded yet.
  // Never waits itself. The HTTP endpoint runs such calls on a worker thread.
  bool MayWait(const Message& message, const ToolContext& context) const;

 private:
  nlohmann::json CallTool(const Message& request, const ToolContext& context) const;
  nlohmann::json Discover() const;
  // The stateless revision's additions to a result: resultType and the server's identity.
  nlohmann::json StatelessResult(nlohmann::json result) const;

  const ToolRegistry* tools_;
  ServerInfo info_;
};

}  // namespace engram::mcp
