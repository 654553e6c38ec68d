#include "common/codec.h"

#include <openssl/evp.h>

#include <algorithm>
#include <array>
#include <bit>
#include <cstdint>
#include <cstring>

namespace engram {

namespace {

constexpr std::array<int8_t, 256> MakeTable() {
  std::array<int8_t, 256> t{};
  for (auto& v : t) v = -1;
  const char* a = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  for (int i = 0; i < 64; ++i) t[static_cast<uint8_t>(a[i])] = static_cast<int8_t>(i);
  t[static_cast<uint8_t>('-')] = 62;
  t[static_cast<uint8_t>('_')] = 63;
  return t;
}
constexpr auto kTable = MakeTable();

}  // namespace

namespace {
bool IsBase64Space(uint8_t c) { return c == ' ' || c == '\n' || c == '\r' || c == '\t'; }
}  // namespace

size_t Base64DecodedSize(std::string_view in) {
  size_t symbols = 0;
  for (char ch : in) {
    const auto c = static_cast<uint8_t>(ch);
    if (!IsBase64Space(c) && c != '=') ++symbols;
  }
  return symbols / 4 * 3 + symbols % 4 * 3 / 4;
}

std::optional<std::string> Base64Decode(std::string_view in, size_t max_decoded) {
  std::string out;
  // The loop stops as soon as the output passes max_decoded, so reserve no more than that.
  out.reserve(
      std::min(in.size() / 4 * 3 + 3, max_decoded == SIZE_MAX ? SIZE_MAX : max_decoded + 1));
  uint32_t acc = 0;
  int bits = 0;
  size_t pad = 0;
  size_t symbols = 0;
  for (char ch : in) {
    auto c = static_cast<uint8_t>(ch);
    if (IsBase64Space(c)) continue;
    if (c == '=') {
      ++pad;
      continue;
    }
    if (pad > 0) return std::nullopt;  // data after padding
    int8_t v = kTable[c];
    if (v < 0) return std::nullopt;
    ++symbols;
    acc = (acc << 6) | static_cast<uint32_t>(v);
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      out.push_back(static_cast<char>((acc >> bits) & 0xFF));
      if (out.size() > max_decoded) return std::nullopt;
    }
  }
  if (pad > 2) return std::nullopt;
  if (symbols % 4 == 1) return std::nullopt;
  if (pad > 0 && (symbols + pad) % 4 != 0) return std::nullopt;
  return out;
}

std::string Base64Encode(std::string_view bytes) {
  static const char* kAlpha = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  out.reserve((bytes.size() + 2) / 3 * 4);
  size_t i = 0;
  for (; i + 2 < bytes.size(); i += 3) {
    uint32_t n = (static_cast<uint8_t>(bytes[i]) << 16) |
                 (static_cast<uint8_t>(bytes[i + 1]) << 8) | static_cast<uint8_t>(bytes[i + 2]);
    out.push_back(kAlpha[(n >> 18) & 63]);
    out.push_back(kAlpha[(n >> 12) & 63]);
    out.push_back(kAlpha[(n >> 6) & 63]);
    out.push_back(kAlpha[n & 63]);
  }
  if (i < bytes.size()) {
    uint32_t n = static_cast<uint8_t>(bytes[i]) << 16;
    if (i + 1 < bytes.size()) n |= static_cast<uint8_t>(bytes[i + 1]) << 8;
    out.push_back(kAlpha[(n >> 18) & 63]);
    out.push_back(kAlpha[(n >> 12) & 63]);
    out.push_back(i + 1 < bytes.size() ? kAlpha[(n >> 6) & 63] : '=');
    out.push_back('=');
  }
  return out;
}

std::string HexEncode(std::string_view bytes) {
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out;
  out.reserve(bytes.size() * 2);
  for (const char c : bytes) {
    const auto byte = static_cast<unsigned char>(c);
    out.push_back(kHex[byte >> 4]);
    out.push_back(kHex[byte & 15]);
  }
  return out;
}

static_assert(std::endian::native == std::endian::little && sizeof(float) == 4,
              "stored vectors are little-endian float32");

std::string_view FloatVectorBytes(const std::vector<float>& v) {
  return {reinterpret_cast<const char*>(v.data()), v.size() * sizeof(float)};
}

std::vector<float> FloatVectorFromBytes(std::string_view bytes) {
  std::vector<float> v(bytes.size() / sizeof(float));
  if (!v.empty()) std::memcpy(v.data(), bytes.data(), v.size() * sizeof(float));
  return v;
}

std::string Sha256Hex(std::string_view bytes) {
  unsigned char md[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  EVP_Digest(bytes.data(), bytes.size(), md, &len, EVP_sha256(), nullptr);
  return HexEncode({reinterpret_cast<const char*>(md), len});
}

struct Sha256::Context {
  EVP_MD_CTX* ctx = EVP_MD_CTX_new();
  ~Context() { EVP_MD_CTX_free(ctx); }
};

Sha256::Sha256() : context_(std::make_unique<Context>()) {
  EVP_DigestInit_ex(context_->ctx, EVP_sha256(), nullptr);
}

Sha256::~Sha256() = default;

void Sha256::Update(std::string_view bytes) {
  EVP_DigestUpdate(context_->ctx, bytes.data(), bytes.size());
}

std::string Sha256::HexDigest() {
  unsigned char md[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  EVP_DigestFinal_ex(context_->ctx, md, &len);
  EVP_DigestInit_ex(context_->ctx, EVP_sha256(), nullptr);
  return HexEncode({reinterpret_cast<const char*>(md), len});
}

}  // namespace engram
