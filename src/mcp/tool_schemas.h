// Small builders for the tools' JSON Schemas, so each tool's schema reads as a list of its
// arguments. Only keywords schema_check.h understands are produced.
// Thread-safety: pure functions.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace engram::mcp::schema {

using json = nlohmann::json;

inline json String(std::string description, size_t max_length = 0, size_t min_length = 0) {
  json s = {{"type", "string"}, {"description", std::move(description)}};
  if (min_length > 0) s["minLength"] = min_length;
  if (max_length > 0) s["maxLength"] = max_length;
  return s;
}

inline json Integer(std::string description, int64_t minimum, int64_t maximum) {
  return {{"type", "integer"},
          {"description", std::move(description)},
          {"minimum", minimum},
          {"maximum", maximum}};
}

inline json Number(std::string description, double minimum, double maximum) {
  return {{"type", "number"},
          {"description", std::move(description)},
          {"minimum", minimum},
          {"maximum", maximum}};
}

inline json Boolean(std::string description, bool default_value) {
  return {{"type", "boolean"}, {"description", std::move(description)}, {"default", default_value}};
}

inline json Object(std::string description) {
  return {{"type", "object"}, {"description", std::move(description)}};
}

inline json ArrayOf(json items, std::string description = "") {
  json s = {{"type", "array"}, {"items", std::move(items)}};
  if (!description.empty()) s["description"] = std::move(description);
  return s;
}

// A closed object schema: exactly these properties, `required` among them.
inline json Closed(json properties, std::vector<std::string> required = {}) {
  json s = {
      {"type", "object"}, {"properties", std::move(properties)}, {"additionalProperties", false}};
  if (!required.empty()) s["required"] = std::move(required);
  return s;
}

// An open object schema for outputs (new fields may be added later).
inline json Shape(json properties, std::vector<std::string> required = {}) {
  json s = {{"type", "object"}, {"properties", std::move(properties)}};
  if (!required.empty()) s["required"] = std::move(required);
  return s;
}

}  // namespace engram::mcp::schema
