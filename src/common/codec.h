// Byte codecs: base64 (standard and URL-safe alphabets) and SHA-256 hex digests.
// Thread-safety: pure functions.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace engram {

// Decodes standard or URL-safe base64; padding optional; ASCII whitespace ignored.
// Returns nullopt on any other character or a bad length. Stops early (nullopt) once the decoded
// size would exceed `max_decoded` bytes, so a huge input costs no allocation.
std::optional<std::string> Base64Decode(std::string_view in, size_t max_decoded = SIZE_MAX);
std::string Base64Encode(std::string_view bytes);

// Lower-case hex SHA-256 of `bytes`.
std::string Sha256Hex(std::string_view bytes);

}  // namespace engram
