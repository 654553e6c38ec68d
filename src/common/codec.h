// Byte codecs: base64 (standard and URL-safe alphabets), hex, SHA-256 hex digests and the byte
// form of a float vector.
// Thread-safety: pure functions; a Sha256 object is used by one thread at a time.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

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

// Lower-case hex of `bytes`, two digits a byte.
std::string HexEncode(std::string_view bytes);

// A float vector's bytes: its float32 values, little-endian (the byte order of every CPU Engram
// builds for, checked at compile time), as the stores' vector columns and the export format hold
// them. The view points into `v` and lives as long as `v` is unchanged.
std::string_view FloatVectorBytes(const std::vector<float>& v);
// The vector `bytes` hold. A trailing partial value (never written by Engram) is ignored; callers
// that must refuse one check `bytes.size() % sizeof(float)` themselves.
std::vector<float> FloatVectorFromBytes(std::string_view bytes);

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
