#include "api/json_input.h"

#include <fmt/format.h>

#include <optional>
#include <string>

namespace engram {


const char* JsonTypeName(const nlohmann::json& v) {
  if (v.is_null()) return "null";
  if (v.is_boolean()) return "a boolean";
  if (v.is_number()) return "a number";
  if (v.is_string()) return "a string";
  if (v.is_array()) return "an array";
  return "an object";
}


bool IsBlank(std::string_view s) {
  for (char c : s) {
    if (c != ' ' && c != '\t' && c != '\n' && c != '\r' && c != '\f' && c != '\v') return false;
  }
  return true;
}


namespace {

// Path (e.g. "messages[0].content") of the first string or key holding a NUL character.
std::optional<std::string> FindNul(const nlohmann::json& v, const std::string& path) {
  if (v.is_string()) {
    if (v.get_ref<const std::string&>().find('\0') != std::string::npos) return path;
  } else if (v.is_array()) {
    for (size_t i = 0; i < v.size(); ++i) {
      if (auto p = FindNul(v[i], fmt::format("{}[{}]", path, i))) return p;
    }
  } else if (v.is_object()) {
    for (auto it = v.begin(); it != v.end(); ++it) {
      if (it.key().find('\0') != std::string::npos) {
        return (path.empty() ? std::string("request body") : path) + " key";
      }
      const std::string child = path.empty() ? it.key() : path + "." + it.key();
      if (auto p = FindNul(it.value(), child)) return p;
    }
  }
  return std::nullopt;
}

}  // namespace

Result<nlohmann::json> ParseJsonObject(std::string_view body, int max_depth) {
  if (IsBlank(body)) return Status::InvalidParameter("request body is empty; expected a JSON object");
  // Depth pre-scan: brackets outside strings.
  int depth = 0;
  bool in_string = false;
  bool nul_escape = false;  // a "\u0000" escape: looked for by path after parsing
  for (size_t i = 0; i < body.size(); ++i) {
    char c = body[i];
    if (in_string) {
      if (c == '\\') {
        if (body.substr(i + 1, 5) == "u0000") nul_escape = true;
        ++i;
      } else if (c == '"') {
        in_string = false;
      }
      continue;
    }
    if (c == '"') {
      in_string = true;
    } else if (c == '{' || c == '[') {
      if (++depth > max_depth) {
        return Status::InvalidParameter(
            fmt::format("request body nests deeper than {} levels", max_depth));
      }
    } else if (c == '}' || c == ']') {
      --depth;
    }
  }
  nlohmann::json j = nlohmann::json::parse(body, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) return Status::InvalidParameter("request body is not valid JSON");
  if (!j.is_object()) {
    return Status::InvalidParameter(
        fmt::format("request body must be a JSON object, got {}", JsonTypeName(j)));
  }
  // Text never holds NUL characters (PostgreSQL cannot store them, C APIs stop at them): refused
  // here for every endpoint and backend alike.
  if (nul_escape) {
    if (auto path = FindNul(j, "")) {
      return Status::InvalidParameter(fmt::format("{} must not contain NUL characters", *path));
    }
  }
  return j;
}

Result<std::optional<std::string>> GetString(const nlohmann::json& obj, std::string_view key,
                                             std::string_view path, StringRule rule) {
  auto it = obj.find(key);
  if (it == obj.end() || it->is_null()) {
    if (rule.required) return Status::InvalidParameter(fmt::format("{} is required", path));
    return std::optional<std::string>();
  }
  if (!it->is_string()) {
    return Status::InvalidParameter(fmt::format("{} must be a string, got {}", path, JsonTypeName(*it)));
  }
  const auto& s = it->get_ref<const std::string&>();
  if (!rule.allow_empty && IsBlank(s)) {
    return Status::InvalidParameter(fmt::format("{} must not be empty", path));
  }
  if (s.size() > rule.max_bytes) {
    return Status::InvalidParameter(
        fmt::format("{} is too long: {} bytes, at most {} allowed", path, s.size(), rule.max_bytes));
  }
  return std::optional<std::string>(s);
}

Result<std::optional<int64_t>> GetInt(const nlohmann::json& obj, std::string_view key,
                                      std::string_view path, int64_t min, int64_t max,
                                      bool required) {
  auto it = obj.find(key);
  if (it == obj.end() || it->is_null()) {
    if (required) return Status::InvalidParameter(fmt::format("{} is required", path));
    return std::optional<int64_t>();
  }
  int64_t v;
  if (it->is_number_integer()) {
    if (it->is_number_unsigned() && it->get<uint64_t>() > static_cast<uint64_t>(INT64_MAX)) {
      return Status::InvalidParameter(fmt::format("{} must be between {} and {}", path, min, max));
    }
    v = it->get<int64_t>();
  } else if (it->is_number_float()) {
    double d = it->get<double>();
    if (!(d >= -9.0e18 && d <= 9.0e18)) {
      return Status::InvalidParameter(fmt::format("{} must be between {} and {}", path, min, max));
    }
    if (d != static_cast<double>(static_cast<int64_t>(d))) {
      return Status::InvalidParameter(fmt::format("{} must be an integer", path));
    }
    v = static_cast<int64_t>(d);
  } else {
    return Status::InvalidParameter(
        fmt::format("{} must be an integer, got {}", path, JsonTypeName(*it)));
  }
  if (v < min || v > max) {
    return Status::InvalidParameter(
        fmt::format("{} must be between {} and {}, got {}", path, min, max, v));
  }
  return std::optional<int64_t>(v);
}

}  // namespace engram
