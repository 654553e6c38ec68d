// Byte codecs: base64 (standard and URL-safe alphabets) and SHA-256 hex digests.
// Thread-safety: pure functions; a Sha256 object is used by one thread at a time.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <string_view>

namespace engram {

// Decodes standard or URL-safe base64; padding optional; ASCII whitespace ignored.
// Returns nullopt on any other character or a bad length. Stops early (nullopt) once the decoded
// size would exceed `max_decoded` bytes, so a huge input costs no allocation.
std::optional<std::string> Base64Decode(std::string_view in, size_t max_decoded = SIZE_MAX);
// The number of bytes `in` decodes to, counted as Base64Decode reads it (whitespace and padding
// skipped), without decoding: a size check that can tell "too large" from "not base64". Exact for
// input Base64Decode accepts.
size_t Base64DecodedSize(std::string_view in);
std::string Base64Encode(std::string_view bytes);

// Lower-case hex SHA-256 of `bytes`.
std::string Sha256Hex(std::string_view bytes);

// SHA-256 of bytes fed in pieces (a file read in blocks), for inputs too large to hold at once.
class Sha256 {
 public:
  Sha256();
  ~Sha256();
  Sha256(const Sha256&) = delete;
  Sha256& operator=(const Sha256&) = delete;

  void Update(std::string_view bytes);
  // Lower-case hex digest of everything fed so far; the object then starts over.
  std::string HexDigest();

 private:
  struct Context;
  std::unique_ptr<Context> context_;
};

}  // namespace engram
