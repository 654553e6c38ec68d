#include "api/query_params.h"

#include <fmt/format.h>

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

}  // namespace engram
