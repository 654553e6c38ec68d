#include "mcp/tool_registry.h"

#include <spdlog/spdlog.h>

#include <exception>

#include "common/json_reader.h"
#include "mcp/schema_check.h"

namespace engram::mcp {

namespace {
using json = nlohmann::json;
}  // namespace

Result<ToolResult> ServiceFailure(std::string_view tool, const Status& status) {
  return ToolResult::Error(std::string(tool) + " failed: " + status.message());
}

bool HasStructuredContent(const std::string& protocol_version) {
  // Revisions are dates: later ones sort later.
  return protocol_version >= "2025-06-18";
}

void ToolRegistry::Add(Tool tool) { tools_.push_back(std::move(tool)); }

const Tool* ToolRegistry::Find(const std::string& name) const {
  for (const Tool& t : tools_) {
    if (t.name == name) return &t;
  }
  return nullptr;
}

json ToolRegistry::Describe(const std::string& protocol_version) const {
  const bool structured = HasStructuredContent(protocol_version);
  json list = json::array();
  for (const Tool& t : tools_) {
    json entry = {
        {"name", t.name}, {"description", t.description}, {"inputSchema", t.input_schema}};
    json annotations = {{"title", t.title},
                        {"readOnlyHint", t.hints.read_only},
                        {"destructiveHint", t.hints.destructive},
                        {"idempotentHint", t.hints.idempotent},
                        {"openWorldHint", t.hints.open_world}};
    entry["annotations"] = std::move(annotations);
    if (structured) {
      entry["title"] = t.title;
      entry["outputSchema"] = t.output_schema;
    }
    list.push_back(std::move(entry));
  }
  return list;
}

Result<ToolResult> ToolRegistry::Call(const Tool& tool, const json& arguments,
                                      const ToolContext& context) const {
  if (Status s = CheckAgainstSchema(arguments, tool.input_schema); !s.ok()) {
    return ToolResult::Error("Invalid arguments for " + tool.name + ": " + s.message());
  }
  try {
    return tool.handler(arguments, context);
  } catch (const std::exception& e) {
    // The exception text may quote the input: only its kind goes to the log.
    spdlog::error("mcp tool {} threw an exception ({} bytes of message)", tool.name,
                  std::string_view(e.what()).size());
    return Status::Internal("tool " + tool.name + " failed unexpectedly");
  }
}

json RenderToolResult(const ToolResult& result, const std::string& protocol_version) {
  json content = json::array({{{"type", "text"}, {"text", result.text}}});
  json out = {{"content", std::move(content)}, {"isError", result.is_error}};
  if (result.is_error) return out;
  if (HasStructuredContent(protocol_version)) {
    out["structuredContent"] = result.structured;
  } else {
    // No structuredContent before 2025-06-18: the data travels as JSON text beside the rendering.
    out["content"].push_back({{"type", "text"}, {"text", DumpJson(result.structured)}});
  }
  return out;
}

}  // namespace engram::mcp
