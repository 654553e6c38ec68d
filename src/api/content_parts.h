// ContentPart arrays (OpenAI-style multimodal message content) as clients send them:
//   {"type": "text", "text": "…"}
//   {"type": "image_url", "image_url": {"url": "data:image/png;base64,…"}}   (or "image_url": "…")
//   {"type": "image", "image": "<base64 or data URL>"}
// Images are decoded, checked by their magic bytes (the declared type is not trusted), and returned
// once per content hash. Remote image URLs are refused: the server does not fetch.
// Thread-safety: pure functions.
#pragma once

#include <map>
#include <nlohmann/json_fwd.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"
#include "core/leaderboard_service.h"
#include "store/types.h"

namespace engram {

struct ContentLimits {
  size_t max_parts = 64;
  size_t max_text_bytes = 8 << 20;          // per text part / string content
  size_t max_image_bytes = 10 << 20;        // per decoded image
  size_t max_total_image_bytes = 30 << 20;  // per request
};

// Accumulates decoded images across a request (deduplicated by hash) and their total size.
struct ImageCollector {
  std::map<std::string, ImageBlob> by_hash;
  size_t total_bytes = 0;
};

// "image/png", "image/jpeg", "image/webp", "image/gif" from magic bytes; nullopt otherwise.
std::optional<std::string> DetectImageMime(std::string_view bytes);

// Parses one ContentPart array at `path` (e.g. "messages[0].content"). With `allow_blank` an
// empty array, or one whose text parts are all blank, is accepted (an empty message of real
// benchmark data); without it such an array is refused (a search query must say something).
Result<std::vector<ContentPart>> ParseContentParts(const nlohmann::json& parts,
                                                   const std::string& path,
                                                   const ContentLimits& limits,
                                                   ImageCollector* images,
                                                   bool allow_blank = false);

}  // namespace engram
