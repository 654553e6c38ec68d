// Query-string parameters (?a=1&b=x%20y) of GET and DELETE requests.
// Thread-safety: pure functions.
#pragma once

#include <initializer_list>
#include <map>
#include <string>
#include <string_view>

#include "common/status.h"

namespace engram {

// Decodes `query` (without '?'): '+' is a space, %XX escapes are decoded. A repeated name, a
// malformed escape, or a value that is not UTF-8 or holds a NUL is kInvalidParameter naming the
// parameter.
Result<std::map<std::string, std::string>> ParseQueryString(std::string_view query);

// params[name] as an integer in [1, max]; `fallback` when absent.
Result<size_t> PositiveQueryParam(const std::map<std::string, std::string>& params,
                                  const char* name, size_t fallback, size_t max);

// kInvalidParameter naming the first parameter not in `known`.
Status CheckKnownQueryParams(const std::map<std::string, std::string>& params,
                             std::initializer_list<std::string_view> known);

}  // namespace engram
