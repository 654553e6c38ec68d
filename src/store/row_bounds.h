// LIMIT and OFFSET values as both backends take them. Internal to store/.
// Thread-safety: pure function.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <limits>

namespace engram {

// A count of rows as a 64-bit signed SQL value: a larger request (SIZE_MAX, "all of them") becomes
// the largest one, which PostgreSQL accepts where it refuses a negative LIMIT or OFFSET.
inline int64_t SqlRowBound(size_t rows) {
  constexpr size_t kMax = static_cast<size_t>(std::numeric_limits<int64_t>::max());
  return static_cast<int64_t>(std::min(rows, kMax));
}

}  // namespace engram
