#include "server/plain_error.h"

#include <string_view>

#include "common/ascii.h"

namespace engram {

namespace {

void AppendJsonEscaped(std::string& out, std::string_view s) {
  static constexpr char kHex[] = "0123456789abcdef";
  for (const char c : s) {
    const auto u = static_cast<unsigned char>(c);
    if (c == '"' || c == '\\') {
      out.push_back('\\');
      out.push_back(c);
    } else if (u < 0x20) {
      out += "\\u00";
      out.push_back(kHex[u >> 4]);
      out.push_back(kHex[u & 15]);
    } else {
      out.push_back(c);
    }
  }
}

}  // namespace

HttpResponse PlainErrorResponse(StatusCode code, const std::string& message) {
  HttpResponse r;
  r.status = HttpStatusOf(code);
  r.body = "{\"code\":\"";
  r.body += ApiCodeOf(code);
  r.body += "\",\"http_code\":";
  r.body += std::to_string(r.status);
  r.body += ",\"message\":\"";
  AppendJsonEscaped(r.body, message);
  r.body += "\"}";
  return r;
}

HttpResponse WithRetryAfter(HttpResponse response) {
  for (const auto& [name, value] : response.headers) {
    if (EqualsIgnoreAsciiCase(name, "retry-after")) return response;
  }
  response.headers.emplace_back("Retry-After", "1");
  return response;
}

}  // namespace engram
