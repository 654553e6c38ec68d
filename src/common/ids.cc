#include "common/ids.h"

#include <chrono>
#include <cstdint>
#include <random>

namespace engram {

namespace {

uint64_t Random64() {
  // Seeded once per thread from the OS; ids only need uniqueness, not secrecy.
  thread_local std::mt19937_64 rng{std::random_device{}() ^
                                   (static_cast<uint64_t>(std::random_device{}()) << 32)};
  return rng();
}

// The canonical 8-4-4-4-12 form of a 128-bit value.
std::string Format(uint64_t hi, uint64_t lo) {
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

}  // namespace

std::string NewUuid() {
  uint64_t hi = Random64();
  uint64_t lo = Random64();
  hi = (hi & 0xFFFFFFFFFFFF0FFFULL) | 0x0000000000004000ULL;  // version 4
  lo = (lo & 0x3FFFFFFFFFFFFFFFULL) | 0x8000000000000000ULL;  // variant 10
  return Format(hi, lo);
}

std::string NewTimeOrderedUuid() {
  const uint64_t us = static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::microseconds>(
                                                std::chrono::system_clock::now().time_since_epoch())
                                                .count());
  const uint64_t ms = us / 1000;
  const uint64_t sub_ms = (us % 1000) * 4096 / 1000;  // RFC 9562 method 3: 12 bits of precision
  const uint64_t hi = ((ms & 0xFFFFFFFFFFFFULL) << 16) | 0x7000ULL | sub_ms;         // version 7
  const uint64_t lo = (Random64() & 0x3FFFFFFFFFFFFFFFULL) | 0x8000000000000000ULL;  // variant 10
  return Format(hi, lo);
}

std::string NewId(std::string_view prefix) {
  std::string id(prefix);
  id.push_back('-');
  id += NewTimeOrderedUuid();
  return id;
}

}  // namespace engram
