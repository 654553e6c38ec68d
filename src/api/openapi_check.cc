#include "api/openapi_check.h"

#include <algorithm>
#include <cctype>
#include <nlohmann/json.hpp>
#include <set>

namespace engram {

namespace {

// "/a/{x}/b" -> "/a/{}/b": parameter names differ between code and document.
std::string Shape(std::string_view path) {
  std::string out;
  out.reserve(path.size());
  for (size_t i = 0; i < path.size(); ++i) {
    if (path[i] == '{') {
      const size_t close = path.find('}', i);
      if (close != std::string_view::npos) {
        out += "{}";
        i = close;
        continue;
      }
    }
    out += path[i];
  }
  return out;
}

std::string Upper(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return std::toupper(c); });
  return s;
}

}  // namespace

std::vector<std::string> CompareRoutesWithOpenApi(const Router& router,
                                                  std::string_view openapi_json) {
  std::vector<std::string> problems;
  // The OpenAPI document is compiled into the binary: trusted, so nlohmann's parse is fine here.
  const auto doc = nlohmann::json::parse(openapi_json, nullptr, /*allow_exceptions=*/false);
  if (doc.is_discarded() || !doc.is_object() || !doc.contains("paths") ||
      !doc["paths"].is_object()) {
    problems.push_back("openapi.json is not an OpenAPI document with a paths object");
    return problems;
  }
  static const std::set<std::string> kMethods = {"GET",   "PUT",  "POST",   "DELETE",
                                                 "PATCH", "HEAD", "OPTIONS"};
  std::set<std::pair<std::string, std::string>> documented, routed;
  for (const auto& [path, item] : doc["paths"].items()) {
    if (!item.is_object()) continue;
    for (const auto& [method, op] : item.items()) {
      const std::string m = Upper(method);
      if (kMethods.count(m)) documented.emplace(m, Shape(path));
    }
  }
  for (const Route& r : router.routes()) routed.emplace(Upper(r.method), Shape(r.pattern));
  for (const auto& [m, p] : routed) {
    if (!documented.count({m, p}))
      problems.push_back(m + " " + p + ": routed but not in openapi.json");
  }
  for (const auto& [m, p] : documented) {
    if (!routed.count({m, p})) problems.push_back(m + " " + p + ": documented but not routed");
  }
  return problems;
}

}  // namespace engram
