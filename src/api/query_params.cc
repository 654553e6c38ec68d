#include "api/query_params.h"

#include <fmt/format.h>

#include <algorithm>

#include "api/json_input.h"
#include "common/ascii.h"

namespace engram {

namespace {

bool Decode(std::string_view in, std::string* out) {
  out->clear();
  for (size_t i = 0; i < in.size(); ++i) {
    if (in[i] == '+') {
      *out += ' ';
    } else if (in[i] == '%') {
      if (i + 2 >= in.size()) return false;
      int hi = HexDigitValue(in[i + 1]), lo = HexDigitValue(in[i + 2]);
      if (hi < 0 || lo < 0) return false;
      *out += static_cast<char>(hi * 16 + lo);
      i += 2;
    } else {
      *out += in[i];
    }
  }
  // As in a JSON body (json_input.h): text never holds NUL characters.
  return out->find('\0') == std::string::npos && IsValidUtf8(*out);
}

}  // namespace

Result<std::map<std::string, std::string>> ParseQueryString(std::string_view query) {
  std::map<std::string, std::string> out;
  while (!query.empty()) {
    size_t amp = query.find('&');
    std::string_view pair = query.substr(0, amp);
    query = amp == std::string_view::npos ? std::string_view() : query.substr(amp + 1);
    if (pair.empty()) continue;
    size_t eq = pair.find('=');
    std::string name, value;
    if (!Decode(pair.substr(0, eq), &name)) {
      return Status::InvalidParameter("query string has a malformed parameter name");
    }
    if (eq != std::string_view::npos && !Decode(pair.substr(eq + 1), &value)) {
      return Status::InvalidParameter(fmt::format("query parameter {} is malformed", name));
    }
    if (!out.emplace(name, value).second) {
      return Status::InvalidParameter(
          fmt::format("query parameter {} is given more than once", name));
    }
  }
  return out;
}

Result<size_t> PositiveQueryParam(const std::map<std::string, std::string>& params,
                                  const char* name, size_t fallback, size_t max) {
  auto it = params.find(name);
  if (it == params.end()) return fallback;
  const std::string& v = it->second;
  if (v.empty() || v.size() > 9 || v.find_first_not_of("0123456789") != std::string::npos) {
    return Status::InvalidParameter(
        fmt::format("{} must be an integer between 1 and {}", name, max));
  }
  const size_t n = std::stoul(v);
  if (n < 1 || n > max) {
    return Status::InvalidParameter(
        fmt::format("{} must be an integer between 1 and {}, got {}", name, max, n));
  }
  return n;
}

Result<PageQuery> PageQueryParams(const std::map<std::string, std::string>& params,
                                  size_t default_size, size_t max_size) {
  auto number = PositiveQueryParam(params, "page_number", 1, 1000000);
  if (!number.ok()) return number.status();
  auto size = PositiveQueryParam(params, "page_size", default_size, max_size);
  if (!size.ok()) return size.status();
  return PageQuery{.number = *number, .size = *size};
}

Result<PageQuery> PageOnlyQuery(std::string_view query, size_t default_size, size_t max_size) {
  auto params = ParseQueryString(query);
  if (!params.ok()) return params.status();
  ENGRAM_RETURN_IF_ERROR(CheckKnownQueryParams(*params, {"page_number", "page_size"}));
  return PageQueryParams(*params, default_size, max_size);
}

Status CheckKnownQueryParams(const std::map<std::string, std::string>& params,
                             std::initializer_list<std::string_view> known) {
  for (const auto& [name, value] : params) {
    if (std::find(known.begin(), known.end(), name) == known.end()) {
      return Status::InvalidParameter(fmt::format("unknown query parameter {}", name));
    }
  }
  return Status::Ok();
}

}  // namespace engram
