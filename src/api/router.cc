#include "api/router.h"

#include <chrono>

namespace engram {

double RequestContext::ElapsedMs() const {
  auto now = std::chrono::duration_cast<std::chrono::nanoseconds>(
                 std::chrono::steady_clock::now().time_since_epoch())
                 .count();
  return static_cast<double>(now - start_ns) / 1e6;
}

std::vector<std::string_view> Router::Split(std::string_view path) {
  std::vector<std::string_view> out;
  size_t i = 0;
  while (i < path.size()) {
    while (i < path.size() && path[i] == '/') ++i;
    size_t j = i;
    while (j < path.size() && path[j] != '/') ++j;
    if (j > i) out.push_back(path.substr(i, j - i));
    i = j;
  }
  return out;
}

void Router::Add(Route route) {
  Compiled c;
  for (auto seg : Split(route.pattern)) c.segments.emplace_back(seg);
  compiled_.push_back(std::move(c));
  routes_.push_back(std::move(route));
}

Router::Match Router::Find(std::string_view method, std::string_view path) const {
  Match result;
  auto segs = Split(path);
  // A trailing slash is tolerated; an empty segment in the middle is not a match.
  for (size_t r = 0; r < routes_.size(); ++r) {
    const auto& pattern = compiled_[r].segments;
    if (pattern.size() != segs.size()) continue;
    std::unordered_map<std::string, std::string> params;
    bool ok = true;
    for (size_t i = 0; i < pattern.size() && ok; ++i) {
      const std::string& p = pattern[i];
      if (p.size() > 2 && p.front() == '{' && p.back() == '}') {
        params.emplace(p.substr(1, p.size() - 2), std::string(segs[i]));
      } else if (p != segs[i]) {
        ok = false;
      }
    }
    if (!ok) continue;
    if (routes_[r].method != method) {
      result.method_mismatch = true;
      continue;
    }
    result.route = &routes_[r];
    result.params = std::move(params);
    result.method_mismatch = false;
    return result;
  }
  return result;
}

}  // namespace engram
