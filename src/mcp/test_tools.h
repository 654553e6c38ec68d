// A tool registry for the protocol and transport tests: "echo" (one required string argument)
// and "boom" (a handler that throws).
#pragma once

#include <stdexcept>

#include "mcp/tool_registry.h"

namespace engram::mcp {

inline ToolRegistry TestTools() {
  ToolRegistry tools;
  tools.Add(
      Tool{.name = "echo",
           .title = "Echo",
           .description = "returns its text",
           .input_schema = {{"type", "object"},
                            {"properties", {{"text", {{"type", "string"}, {"minLength", 1}}}}},
                            {"required", {"text"}},
                            {"additionalProperties", false}},
           .output_schema = {{"type", "object"}, {"properties", {{"text", {{"type", "string"}}}}}},
           .hints = {.read_only = true, .idempotent = true},
           .handler = [](const nlohmann::json& args, const ToolContext& ctx) {
             ToolResult r;
             r.structured = {{"text", args["text"]}, {"workspace", ctx.workspace}};
             r.text = args["text"].get<std::string>() + " @" + ctx.workspace;
             return r;
           }});
  tools.Add(Tool{.name = "boom",
                 .title = "Boom",
                 .description = "throws",
                 .input_schema = {{"type", "object"}},
                 .output_schema = {{"type", "object"}},
                 .handler = [](const nlohmann::json&, const ToolContext&) -> ToolResult {
                   throw std::runtime_error("secret content");
                 }});
  return tools;
}

}  // namespace engram::mcp
