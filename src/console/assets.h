// The web console's files (src/console/web), compiled into the binary at build time so that the
// console works offline and needs nothing installed beside the binary.
// Thread-safety: immutable data.
#pragma once

#include <string_view>
#include <vector>

namespace engram::console {

struct Asset {
  std::string_view name;          // "index.html", "console.js", ...
  std::string_view content_type;  // with charset for text
  std::string_view body;
};

const std::vector<Asset>& Assets();

// The asset named `name`, or nullptr.
const Asset* FindAsset(std::string_view name);

}  // namespace engram::console
