// Field readers shared by the memory APIs (V4 and mem0-compatible): scope ids, metadata,
// timestamps, expiration dates and paging parameters, each failing with kInvalidParameter naming
// the field and the problem.
// Thread-safety: pure functions.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>

#include "common/status.h"

namespace engram {

// A scope or memory id: at most max_bytes of UTF-8.
Status CheckIdValue(const std::string& value, std::string_view name, size_t max_bytes);

// Reads the optional string ids `names` of a body into `out` (same order; unset ones stay "").
Status ReadIdFields(const nlohmann::json& body, std::initializer_list<const char*> names,
                    size_t max_bytes, std::initializer_list<std::string*> out);

// body["threshold"]: a number in [0, 1]; nullopt when absent or null.
Result<std::optional<float>> ReadThresholdField(const nlohmann::json& body);

// body["metadata"] dumped as a JSON object ("{}" when absent or null); at most max_bytes.
Result<std::string> ReadMetadataField(const nlohmann::json& body, size_t max_bytes);

// body["timestamp"]: Unix seconds (number) or an ISO 8601 date-time (string), as microseconds.
Result<std::optional<int64_t>> ReadTimestampField(const nlohmann::json& body);

// body["expiration_date"]: "YYYY-MM-DD", as the first microsecond after that day (UTC).
Result<std::optional<int64_t>> ReadExpirationField(const nlohmann::json& body);

// "YYYY-MM-DD" of the day an expiration time (as ReadExpirationField returns it) ends.
std::string FormatExpirationDate(int64_t expires_at_us);

}  // namespace engram
