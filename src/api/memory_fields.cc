#include "api/memory_fields.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "api/json_input.h"
#include "common/json_reader.h"
#include "common/time_util.h"

namespace engram {

namespace {
constexpr int64_t kMicrosPerDay = 86400LL * 1000000;
}  // namespace

Status CheckIdValue(const std::string& value, std::string_view name, size_t max_bytes) {
  if (value.size() > max_bytes) {
    return Status::InvalidParameter(
        fmt::format("{} is too long: {} bytes, at most {} allowed", name, value.size(), max_bytes));
  }
  if (!IsValidUtf8(value))
    return Status::InvalidParameter(fmt::format("{} must be valid UTF-8", name));
  return Status::Ok();
}

Status ReadIdFields(const nlohmann::json& body, std::initializer_list<const char*> names,
                    size_t max_bytes, std::initializer_list<std::string*> out) {
  auto target = out.begin();
  for (const char* name : names) {
    std::string* into = *target++;
    auto v = GetString(body, name, name, {.required = false, .max_bytes = max_bytes});
    if (!v.ok()) return v.status();
    if (*v) {
      ENGRAM_RETURN_IF_ERROR(CheckIdValue(**v, name, max_bytes));
      *into = **v;
    }
  }
  return Status::Ok();
}

Result<std::optional<float>> ReadThresholdField(const nlohmann::json& body) {
  auto it = body.find("threshold");
  if (it == body.end() || it->is_null()) return std::optional<float>();
  if (!it->is_number() || it->get<double>() < 0 || it->get<double>() > 1) {
    return Status::InvalidParameter("threshold must be a number between 0 and 1");
  }
  return std::optional<float>(it->get<float>());
}

Result<std::string> ReadMetadataField(const nlohmann::json& body, size_t max_bytes) {
  auto it = body.find("metadata");
  if (it == body.end() || it->is_null()) return std::string("{}");
  if (!it->is_object()) {
    return Status::InvalidParameter(
        fmt::format("metadata must be an object, got {}", JsonTypeName(*it)));
  }
  std::string dumped = DumpJson(*it);
  if (dumped.size() > max_bytes) {
    return Status::InvalidParameter(fmt::format(
        "metadata is too large: {} bytes, at most {} allowed", dumped.size(), max_bytes));
  }
  return dumped;
}

Result<std::optional<int64_t>> ReadTimestampField(const nlohmann::json& body) {
  return GetTime(body, "timestamp");
}

Result<std::optional<int64_t>> ReadExpirationField(const nlohmann::json& body) {
  auto v =
      GetString(body, "expiration_date", "expiration_date", {.required = false, .max_bytes = 10});
  if (!v.ok()) return Status::InvalidParameter("expiration_date must be a date YYYY-MM-DD");
  if (!*v) return std::optional<int64_t>();
  const std::string& s = **v;
  auto digits = [&s](size_t from, size_t n) {
    for (size_t i = from; i < from + n; ++i) {
      if (s[i] < '0' || s[i] > '9') return false;
    }
    return true;
  };
  if (s.size() != 10 || s[4] != '-' || s[7] != '-' || !digits(0, 4) || !digits(5, 2) ||
      !digits(8, 2)) {
    return Status::InvalidParameter("expiration_date must be a date YYYY-MM-DD");
  }
  const int y = std::stoi(s.substr(0, 4));
  const unsigned m = static_cast<unsigned>(std::stoi(s.substr(5, 2)));
  const unsigned d = static_cast<unsigned>(std::stoi(s.substr(8, 2)));
  static constexpr unsigned kDays[] = {31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
  const bool leap = (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
  if (m < 1 || m > 12 || d < 1 || d > kDays[m - 1] || (m == 2 && d == 29 && !leap)) {
    return Status::InvalidParameter(fmt::format("expiration_date {} is not a valid date", s));
  }
  return std::optional<int64_t>((DaysFromCivil(y, m, d) + 1) * kMicrosPerDay);
}

std::string FormatExpirationDate(int64_t expires_at_us) {
  // The last day the memory is visible: the day before the first invisible microsecond.
  const int64_t day = (expires_at_us - 1) / kMicrosPerDay - ((expires_at_us - 1) < 0 ? 1 : 0);
  const Civil c = CivilFromDays(day);
  return fmt::format("{:04}-{:02}-{:02}", c.y, c.m, c.d);
}

}  // namespace engram
