// The image hashes a stored ContentPart array references, for deleting images no message shows
// any more. Thread-safety: a pure function.
#pragma once

#include <set>
#include <string>
#include <string_view>

namespace engram {

// PartsToStoredJson writes image parts as {"mime":…,"sha256":"<hex>","type":"image"}. Inside a
// JSON string a quote is escaped, so the unescaped key cannot come from message text.
inline void CollectImageHashes(const std::string& parts_json, std::set<std::string>* out) {
  static constexpr std::string_view kKey = "\"sha256\":\"";
  for (size_t at = parts_json.find(kKey); at != std::string::npos;
       at = parts_json.find(kKey, at + 1)) {
    const size_t begin = at + kKey.size();
    const size_t end = parts_json.find('"', begin);
    if (end == std::string::npos) break;
    out->insert(parts_json.substr(begin, end - begin));
  }
}

}  // namespace engram
