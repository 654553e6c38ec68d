#include "common/ids.h"

#include <cstdint>
#include <random>

namespace engram {

std::string NewUuid() {
  // Seeded once per thread from the OS; ids only need uniqueness, not secrecy.
  thread_local std::mt19937_64 rng{std::random_device{}() ^
                                   (static_cast<uint64_t>(std::random_device{}()) << 32)};
  uint64_t hi = rng();
  uint64_t lo = rng();
  hi = (hi & 0xFFFFFFFFFFFF0FFFULL) | 0x0000000000004000ULL;  // version 4
  lo = (lo & 0x3FFFFFFFFFFFFFFFULL) | 0x8000000000000000ULL;  // variant 10
  static const char* kHex = "0123456789abcdef";
  std::string out;
  out.reserve(36);
  auto put = [&](uint64_t v, int nibbles_from, int nibbles_to) {
    for (int i = nibbles_from; i < nibbles_to; ++i) out.push_back(kHex[(v >> (60 - 4 * i)) & 0xF]);
  };
  put(hi, 0, 8);
  out.push_back('-');
  put(hi, 8, 12);
  out.push_back('-');
  put(hi, 12, 16);
  out.push_back('-');
  put(lo, 0, 4);
  out.push_back('-');
  put(lo, 4, 16);
  return out;
}

std::string NewId(std::string_view prefix) {
  std::string id(prefix);
  id.push_back('-');
  id += NewUuid();
  return id;
}

}  // namespace engram
