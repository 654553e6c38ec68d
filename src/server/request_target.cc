#include "server/request_target.h"

#include "common/ascii.h"

namespace engram {

void PercentDecode(std::string_view in, std::string& out) {
  out.clear();
  out.reserve(in.size());
  for (size_t i = 0; i < in.size(); ++i) {
    if (in[i] == '%' && i + 2 < in.size()) {
      const int hi = HexDigitValue(in[i + 1]), lo = HexDigitValue(in[i + 2]);
      if (hi >= 0 && lo >= 0) {
        out.push_back(static_cast<char>(hi * 16 + lo));
        i += 2;
        continue;
      }
    }
    out.push_back(in[i]);
  }
}

namespace {

// An absolute-form target ("http://host/p?q") reduced to its origin form ("/p?q").
std::string_view OriginForm(std::string_view target) {
  if (!target.empty() && target.front() != '/') {
    const size_t scheme = target.find("://");
    if (scheme != std::string_view::npos) {
      const size_t slash = target.find('/', scheme + 3);
      target = slash == std::string_view::npos ? std::string_view("/") : target.substr(slash);
    }
  }
  return target;
}

}  // namespace

std::string_view RawPath(std::string_view target) {
  target = OriginForm(target);
  return target.substr(0, target.find('?'));
}

void SplitTarget(std::string_view target, std::string& path, std::string& query) {
  target = OriginForm(target);
  const size_t q = target.find('?');
  if (q == std::string_view::npos) {
    query.clear();
    PercentDecode(target, path);
  } else {
    query.assign(target.substr(q + 1));
    PercentDecode(target.substr(0, q), path);
  }
}

}  // namespace engram
