// Query-string parameters (?a=1&b=x%20y) of GET and DELETE requests.
// Thread-safety: pure functions.
#pragma once

#include <map>
#include <string>
#include <string_view>

#include "common/status.h"

namespace engram {

// Decodes `query` (without '?'): '+' is a space, %XX escapes are decoded. A repeated name, a
// malformed escape, or a value that is not UTF-8 or holds a NUL is kInvalidParameter naming the
// parameter.
Result<std::map<std::string, std::string>> ParseQueryString(std::string_view query);

}  // namespace engram
