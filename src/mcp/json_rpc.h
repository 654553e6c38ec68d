// JSON-RPC 2.0 as MCP uses it: reading one message (request, notification or response) from a
// parsed JSON value, and building result and error responses.
//
// MCP narrows JSON-RPC: a request id is a string or an integer, never null; params, when present,
// are an object. A message that breaks these rules is an Invalid Request (-32600), answered with
// the request's id when one could be read, else with a null id.
//
// Thread-safety: pure functions and value types.
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>

#include "common/status.h"

namespace engram::mcp {

// The JSON-RPC 2.0 error codes MCP answers with.
inline constexpr int kParseError = -32700;
inline constexpr int kInvalidRequest = -32600;
inline constexpr int kMethodNotFound = -32601;
inline constexpr int kInvalidParams = -32602;
inline constexpr int kInternalError = -32603;
// Implementation-defined server errors (-32000..-32099): refusals of the HTTP transport (origin,
// headers, session) that carry no request id.
inline constexpr int kTransportError = -32000;
inline constexpr int kSessionNotFound = -32001;

enum class MessageKind { kRequest, kNotification, kResponse };

struct Message {
  MessageKind kind = MessageKind::kRequest;
  nlohmann::json id;      // requests and responses; null for notifications
  std::string method;     // requests and notifications
  nlohmann::json params;  // an object (empty when absent)
};

struct RpcError {
  int code = kInternalError;
  std::string message;
  nlohmann::json id;  // the id to answer with (null when none could be read)
};

// Reads one message from `value`; the error when it is not a valid JSON-RPC 2.0 message under
// MCP's rules (not an object, jsonrpc other than "2.0", a bad id, method or params).
std::optional<RpcError> ReadMessage(const nlohmann::json& value, Message* out);

// Parses a message body of at most `max_bytes` (ReadJson: bounded depth, duplicate keys refused).
// A parse failure is a Parse error (-32700) whose message says where the text went wrong.
std::optional<RpcError> ParseBody(std::string_view body, size_t max_bytes, nlohmann::json* out);

nlohmann::json ResultResponse(const nlohmann::json& id, nlohmann::json result);
nlohmann::json ErrorResponse(const nlohmann::json& id, int code, std::string_view message,
                             const nlohmann::json& data = nullptr);
inline nlohmann::json ErrorResponse(const RpcError& e) {
  return ErrorResponse(e.id, e.code, e.message);
}

}  // namespace engram::mcp
