// Requests of the stateless MCP revision (2026-07-28): no initialize and no session; every
// request carries its protocol version and the client's capabilities in `params._meta`, and over
// HTTP mirrors its version, method and target name in the MCP-Protocol-Version, Mcp-Method and
// Mcp-Name headers so that proxies and load balancers can route it without reading the body.
//
// A message belongs to the stateless revision when its `params._meta` names a protocol version
// (the envelope claim), or when its MCP-Protocol-Version header names a revision of 2026-07-28 or
// later; everything else is the session-based revisions' (2025-11-25 and earlier), served as
// before on the same endpoints. CheckStatelessMessage applies the revision's checks in the order
// the reference SDK applies them, so a client reads the same error whichever server it meets:
//   1. the envelope: protocolVersion a string, clientCapabilities an object, clientInfo (when
//      sent) an object with string name and version                       -> 400, -32602
//   2. headers that contradict the body (version, method)                  -> 400, -32020
//   3. a version this server does not serve; data {supported, requested}   -> 400, -32022
//   4. requests only: a missing MCP-Protocol-Version or Mcp-Method header, or an Mcp-Name that is
//      missing, wrongly encoded or another name than params.name          -> 400, -32020
//
// Thread-safety: pure functions.
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "mcp/json_rpc.h"

namespace engram::mcp {

// Error codes the stateless revision reserves.
inline constexpr int kHeaderMismatch = -32020;
inline constexpr int kUnsupportedProtocolVersion = -32022;

// The reserved `_meta` keys of a request, and the one of a result naming the server.
inline constexpr std::string_view kProtocolVersionKey = "io.modelcontextprotocol/protocolVersion";
inline constexpr std::string_view kClientCapabilitiesKey =
    "io.modelcontextprotocol/clientCapabilities";
inline constexpr std::string_view kClientInfoKey = "io.modelcontextprotocol/clientInfo";
inline constexpr std::string_view kServerInfoKey = "io.modelcontextprotocol/serverInfo";

// The stateless revisions this server serves, newest first.
const std::vector<std::string>& StatelessProtocolVersions();
bool IsStatelessProtocolVersion(std::string_view version);
// Whether `version` names a revision of the stateless era (a date from 2026-07-28 on), served
// here or not.
bool IsStatelessEra(std::string_view version);

// Whether a parsed body is stateless traffic (see the file comment). A batch counts when any of
// its messages claims the revision (batches do not exist in it and are refused).
bool IsStatelessTraffic(const nlohmann::json& body, const std::string* version_header);

// The standard request headers, null when absent.
struct StandardHeaders {
  const std::string* protocol_version = nullptr;
  const std::string* method = nullptr;
  const std::string* name = nullptr;
};

struct StatelessRefusal {
  int http_status = 400;
  int code = kInvalidParams;
  std::string message;
  nlohmann::json data;  // the error's data (null when none)
};

// Checks a request or notification of the stateless revision; on success sets *version to the
// revision it asks for (one this server serves).
std::optional<StatelessRefusal> CheckStatelessMessage(const Message& message,
                                                      const StandardHeaders& headers,
                                                      std::string* version);

// The body field the Mcp-Name header mirrors for `method` ("name" for tools/call), or "" when the
// method has none.
std::string_view NameField(std::string_view method);

// Mcp-Name values: plain when the name is printable ASCII without leading or trailing spaces,
// else "=?base64?<standard base64 of the UTF-8 bytes>?=". Decoding returns nullopt for a
// malformed or non-canonical base64 form.
std::string EncodeHeaderValue(std::string_view value);
std::optional<std::string> DecodeHeaderValue(std::string_view value);

}  // namespace engram::mcp
