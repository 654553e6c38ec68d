#include "api/json_input.h"

#include <fmt/format.h>

#include <cmath>
#include <limits>
#include <optional>
#include <string>
#include <utility>

#include "common/json_reader.h"
#include "common/time_util.h"

namespace engram {

Result<std::optional<bool>> GetBool(const nlohmann::json& obj, std::string_view key) {
  auto it = obj.find(key);
  if (it == obj.end() || it->is_null()) return std::optional<bool>();
  if (!it->is_boolean()) {
    return Status::InvalidParameter(
        fmt::format("{} must be a boolean, got {}", key, JsonTypeName(*it)));
  }
  return std::optional<bool>(it->get<bool>());
}

Result<std::optional<int64_t>> GetTime(const nlohmann::json& obj, std::string_view key) {
  auto it = obj.find(key);
  if (it == obj.end() || it->is_null()) return std::optional<int64_t>();
  if (it->is_number()) {
    const double seconds = it->get<double>();
    // Unix seconds from 1970 to 9999.
    if (!(seconds >= 0 && seconds <= 253402300799.0)) {
      return Status::InvalidParameter(
          fmt::format("{} must be Unix seconds between 0 and 253402300799", key));
    }
    return std::optional<int64_t>(static_cast<int64_t>(std::llround(seconds * 1e6)));
  }
  if (it->is_string()) {
    auto micros = ParseIsoToMicros(it->get_ref<const std::string&>());
    if (!micros) {
      return Status::InvalidParameter(fmt::format(
          "{} must be Unix seconds or an ISO 8601 date-time, e.g. 2024-05-01T10:00:00Z", key));
    }
    return std::optional<int64_t>(*micros);
  }
  return Status::InvalidParameter(
      fmt::format("{} must be a number or a string, got {}", key, JsonTypeName(*it)));
}

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

Result<nlohmann::json> ParseJsonObject(std::string_view body, int max_depth) {
  if (IsBlank(body))
    return Status::InvalidParameter("request body is empty; expected a JSON object");
  // The HTTP layer bounds the body's size. Text never holds NUL characters (PostgreSQL cannot
  // store them, C APIs stop at them): refused here for every endpoint and backend alike.
  const JsonReadLimits limits{.what = "request body",
                              .max_bytes = std::numeric_limits<size_t>::max(),
                              .max_depth = max_depth,
                              .refuse_duplicate_keys = true,
                              .refuse_nul = true};
  auto j = ReadJson(body, limits);
  if (!j.ok()) return j.status();
  if (!j->is_object()) {
    return Status::InvalidParameter(
        fmt::format("request body must be a JSON object, got {}", JsonTypeName(*j)));
  }
  return std::move(*j);
}

Result<std::optional<std::string>> GetString(const nlohmann::json& obj, std::string_view key,
                                             std::string_view path, StringRule rule) {
  auto it = obj.find(key);
  if (it == obj.end() || it->is_null()) {
    if (rule.required) return Status::InvalidParameter(fmt::format("{} is required", path));
    return std::optional<std::string>();
  }
  if (!it->is_string()) {
    return Status::InvalidParameter(
        fmt::format("{} must be a string, got {}", path, JsonTypeName(*it)));
  }
  const auto& s = it->get_ref<const std::string&>();
  if (!rule.allow_empty && IsBlank(s)) {
    return Status::InvalidParameter(fmt::format("{} must not be empty", path));
  }
  if (s.size() > rule.max_bytes) {
    return Status::InvalidParameter(fmt::format("{} is too long: {} bytes, at most {} allowed",
                                                path, s.size(), rule.max_bytes));
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
