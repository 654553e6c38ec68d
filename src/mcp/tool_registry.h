// The MCP tools the server offers: their descriptions for tools/list and their handlers for
// tools/call.
//
// A handler receives arguments that already passed the tool's inputSchema (schema_check.h) and
// answers with a ToolResult: structured content (matching the outputSchema) plus a readable text
// rendering, or an error (isError) whose text tells the model what to change. Handlers report
// expected failures in the result, never by throwing; ToolRegistry::Call turns an exception into
// an internal error all the same.
//
// Thread-safety: build with Add before serving, then Find, Describe and Call are safe to call
// concurrently (handlers must be). Ownership: owns the tool descriptions; handlers capture
// services they do not own, which must outlive the registry.
#pragma once

#include <functional>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "common/status.h"

namespace engram::mcp {

// What a tool call runs against. The transport resolves the workspace (and has checked that the
// caller's key may use it): handlers never see another one.
struct ToolContext {
  std::string workspace;
  std::string protocol_version;  // negotiated at initialize
};

struct ToolResult {
  nlohmann::json structured = nlohmann::json::object();  // structuredContent (not for errors)
  std::string text;                                      // the readable rendering
  bool is_error = false;

  static ToolResult Error(std::string text) {
    ToolResult r;
    r.structured = nullptr;
    r.text = std::move(text);
    r.is_error = true;
    return r;
  }
};

// A handler answers with a ToolResult (errors included); a Status only for an internal failure.
using ToolHandler =
    std::function<Result<ToolResult>(const nlohmann::json& arguments, const ToolContext&)>;

// The result for a failed service call: an error result naming the tool and the service's
// message.
Result<ToolResult> ServiceFailure(std::string_view tool, const Status& status);

// MCP tool annotations (hints for hosts deciding whether to ask the user first).
struct ToolHints {
  bool read_only = false;
  bool destructive = false;
  bool idempotent = false;
  bool open_world = false;  // reaches outside the server (no tool here does)
};

struct Tool {
  std::string name;  // [A-Za-z0-9_.-], unique
  std::string title;
  std::string description;
  nlohmann::json input_schema;   // an object schema; additionalProperties false
  nlohmann::json output_schema;  // the shape of structuredContent
  ToolHints hints;
  // Read-only tools that read shards: the non-blocking probe of whether a call answers without a
  // long wait (the shards it reads are loaded). The HTTP endpoint asks it on an I/O thread before
  // any call runs; false sends the request to a worker. No probe: the read never waits. Must not
  // wait itself; `arguments` are unchecked.
  std::function<bool(const nlohmann::json& arguments, const ToolContext&)> ready;
  ToolHandler handler;
};

// The Tool::ready probe of a tool that reads one workspace's shard of `service` (memories,
// skills): whether service->WorkspaceLoaded(the session's workspace).
template <typename Service>
auto WorkspaceLoadedProbe(const Service* service) {
  return [service](const nlohmann::json&, const ToolContext& context) {
    return service->WorkspaceLoaded(context.workspace);
  };
}

class ToolRegistry {
 public:
  void Add(Tool tool);
  const Tool* Find(const std::string& name) const;
  const std::vector<Tool>& tools() const { return tools_; }

  // The tools/list entries for a protocol revision: 2025-03-26 has no title or outputSchema.
  nlohmann::json Describe(const std::string& protocol_version) const;

  // Runs `tool` after checking `arguments` against its inputSchema: a failed check is an error
  // result naming the argument. kInternal when the handler threw.
  Result<ToolResult> Call(const Tool& tool, const nlohmann::json& arguments,
                          const ToolContext& context) const;

 private:
  std::vector<Tool> tools_;
};

// The tools/call result object for `result` under a protocol revision: content (the text, and
// under 2025-03-26, which has no structuredContent, the JSON too), structuredContent, isError.
nlohmann::json RenderToolResult(const ToolResult& result, const std::string& protocol_version);

// Whether a protocol revision knows structured tool output (2025-06-18 and later).
bool HasStructuredContent(const std::string& protocol_version);

}  // namespace engram::mcp
