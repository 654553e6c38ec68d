#include "api/router.h"

#include <chrono>

#include "common/ascii.h"
#include "common/utf8.h"
#include "server/request_target.h"

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

namespace {
bool IsParam(const std::string& segment) {
  return segment.size() > 2 && segment.front() == '{' && segment.back() == '}';
}

// What no id holds, and a body's JSON string could not carry either (see Match).
bool WellFormedParam(std::string_view raw, std::string_view decoded) {
  for (size_t i = raw.find('%'); i != std::string_view::npos; i = raw.find('%', i + 1)) {
    if (i + 2 >= raw.size() || HexDigitValue(raw[i + 1]) < 0 || HexDigitValue(raw[i + 2]) < 0) {
      return false;
    }
  }
  return decoded.find('\0') == std::string_view::npos && IsValidUtf8(decoded);
}
}  // namespace

const Route* Router::Resolve(std::string_view method, const std::vector<std::string_view>& segs,
                             bool* method_mismatch, size_t* index) const {
  // Among the patterns that match the path, the one with the most literal segments names it:
  // "memories/add" is the add action even though "memories/{memory_id}" matches it too, so GET on
  // it is a 405, not a lookup of a memory called "add". A trailing slash is tolerated; an empty
  // segment in the middle is not a match.
  const Route* found = nullptr;
  bool mismatch = false;
  int best_literals = -1;
  for (size_t r = 0; r < routes_.size(); ++r) {
    const auto& pattern = compiled_[r].segments;
    if (pattern.size() != segs.size()) continue;
    bool ok = true;
    int literals = 0;
    for (size_t i = 0; i < pattern.size() && ok; ++i) {
      if (IsParam(pattern[i])) continue;
      if (pattern[i] != segs[i]) {
        ok = false;
      } else {
        ++literals;
      }
    }
    if (!ok || literals < best_literals) continue;
    if (literals > best_literals) {  // a more specific path: forget what less specific ones said
      best_literals = literals;
      found = nullptr;
      mismatch = false;
    }
    if (routes_[r].method != method) {
      if (!found) mismatch = true;
      continue;
    }
    if (!found) {
      found = &routes_[r];
      *index = r;
      mismatch = false;
    }
  }
  *method_mismatch = mismatch;
  return found;
}

std::vector<std::string_view> Router::DecodedSegments(std::string_view path,
                                                      std::vector<std::string>& decoded) {
  std::vector<std::string_view> segs = Split(path);
  decoded.reserve(segs.size());  // no reallocation: views into it stay valid
  for (std::string_view& seg : segs) {
    if (seg.find('%') == std::string_view::npos) continue;
    PercentDecode(seg, decoded.emplace_back());
    seg = decoded.back();
  }
  return segs;
}

Router::Match Router::Find(std::string_view method, std::string_view path) const {
  Match result;
  std::vector<std::string> decoded;
  const std::vector<std::string_view> segs = DecodedSegments(path, decoded);
  size_t index = 0;
  result.route = Resolve(method, segs, &result.method_mismatch, &index);
  if (result.route) {  // the parameters of the route that names the path, and only of it
    const auto& pattern = compiled_[index].segments;
    const std::vector<std::string_view> raw = Split(path);
    for (size_t i = 0; i < pattern.size(); ++i) {
      if (IsParam(pattern[i])) {
        std::string name = pattern[i].substr(1, pattern[i].size() - 2);
        if (result.malformed_param.empty() && !WellFormedParam(raw[i], segs[i])) {
          result.malformed_param = name;
        }
        result.params.emplace(std::move(name), std::string(segs[i]));
      }
    }
  }
  return result;
}

const Route* Router::FindRoute(std::string_view method, std::string_view path) const {
  bool mismatch = false;
  size_t index = 0;
  std::vector<std::string> decoded;
  return Resolve(method, DecodedSegments(path, decoded), &mismatch, &index);
}

}  // namespace engram
