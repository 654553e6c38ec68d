// Parsing and field validation for JSON request bodies. Every failure is an InvalidParameter
// Status whose message names the field (with its path, e.g. "messages[2].role") and the problem.
// Thread-safety: pure functions.
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>

#include "common/status.h"
#include "common/utf8.h"  // IsValidUtf8, used with these helpers

namespace engram {

// Parses a request body that must be a JSON object, with ReadJson (common/json_reader.h): nesting
// deeper than `max_depth` is refused as soon as it is read, so hostile input cannot exhaust the
// stack; duplicate keys and NUL characters are refused; syntax errors name the byte offset.
Result<nlohmann::json> ParseJsonObject(std::string_view body, int max_depth = 64);

struct StringRule {
  bool required = true;
  bool allow_empty = false;  // empty or whitespace-only counts as empty
  size_t max_bytes = 256;
};

// Reads obj[key] as a string. nullopt when absent (and not required) or null.
Result<std::optional<std::string>> GetString(const nlohmann::json& obj, std::string_view key,
                                             std::string_view path, StringRule rule);

// Reads obj[key] as an integer within [min, max] (integral JSON numbers only).
Result<std::optional<int64_t>> GetInt(const nlohmann::json& obj, std::string_view key,
                                      std::string_view path, int64_t min, int64_t max,
                                      bool required);

// Reads obj[key] as a boolean; nullopt when absent or null.
Result<std::optional<bool>> GetBool(const nlohmann::json& obj, std::string_view key);

// Reads obj[key] as a point in time, in microseconds since the epoch (UTC): Unix seconds (a
// number, 1970 to 9999) or an ISO 8601 date or date-time (a string: "2024-05-01",
// "2024-05-01T10:00:00Z"). nullopt when absent or null.
Result<std::optional<int64_t>> GetTime(const nlohmann::json& obj, std::string_view key);

// "object", "array", "string", "number", "boolean" or "null", for error messages.
const char* JsonTypeName(const nlohmann::json& v);

// True for strings with no non-whitespace character.
bool IsBlank(std::string_view s);

}  // namespace engram
