// Approximate heap bytes of standard-library pieces as libstdc++ lays them out, for the memory
// estimates the shards report to the shard budget (--shard-memory-mb). Estimates, not
// measurements: allocator headers and rounding are left out.
//
// Thread-safety: constants and pure functions.
#pragma once

#include <cstddef>
#include <string>

namespace engram {

// A node of an unordered container, beside its value: the next pointer and the cached hash.
inline constexpr size_t kHashNodeBytes = 2 * sizeof(void*);

// What a string owns on the heap: nothing while it fits the small-string buffer (15 bytes), else
// its capacity and the terminating NUL.
inline size_t StringHeapBytes(const std::string& s) {
  constexpr size_t kSmallStringCapacity = 15;
  return s.capacity() > kSmallStringCapacity ? s.capacity() + 1 : 0;
}

}  // namespace engram
