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
  // Among the patterns that match the path, the one with the most literal segments names it:
  // "memories/add" is the add action even though "memories/{memory_id}" matches it too, so GET on
  // it is a 405, not a lookup of a memory called "add". A trailing slash is tolerated; an empty
  // segment in the middle is not a match.
  int best_literals = -1;
  for (size_t r = 0; r < routes_.size(); ++r) {
    const auto& pattern = compiled_[r].segments;
    if (pattern.size() != segs.size()) continue;
    std::unordered_map<std::string, std::string> params;
    bool ok = true;
    int literals = 0;
    for (size_t i = 0; i < pattern.size() && ok; ++i) {
      const std::string& p = pattern[i];
      if (p.size() > 2 && p.front() == '{' && p.back() == '}') {
        params.emplace(p.substr(1, p.size() - 2), std::string(segs[i]));
      } else if (p != segs[i]) {
        ok = false;
      } else {
        ++literals;
      }
    }
    if (!ok || literals < best_literals) continue;
    if (literals > best_literals) {  // a more specific path: forget what less specific ones said
      best_literals = literals;
      result = Match{};
    }
    if (routes_[r].method != method) {
      if (!result.route) result.method_mismatch = true;
      continue;
    }
    if (!result.route) {
      result.route = &routes_[r];
      result.params = std::move(params);
      result.method_mismatch = false;
    }
  }
  return result;
}

}  // namespace engram
