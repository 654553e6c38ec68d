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

// A page of a list: `page_number` from 1 (at most 1,000,000) and `page_size` from 1 to `max_size`,
// `default_size` when absent.
struct PageQuery {
  size_t number = 1;
  size_t size = 0;
  size_t offset() const { return (number - 1) * size; }
};
Result<PageQuery> PageQueryParams(const std::map<std::string, std::string>& params,
                                  size_t default_size, size_t max_size);
// The page of a list whose query string may hold nothing else: parsed, any other parameter
// refused (kInvalidParameter naming it), then as PageQueryParams.
Result<PageQuery> PageOnlyQuery(std::string_view query, size_t default_size, size_t max_size);

// kInvalidParameter naming the first parameter not in `known`.
Status CheckKnownQueryParams(const std::map<std::string, std::string>& params,
                             std::initializer_list<std::string_view> known);

}  // namespace engram
