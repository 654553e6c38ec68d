// The offset of a page of a list, as every service's list takes pages.
// Thread-safety: pure function.
#pragma once

#include <algorithm>
#include <cstddef>

namespace engram {

// The first item of page `page_number` (from 1; 0 reads as 1) of `page_size` items.
inline size_t PageOffset(size_t page_number, size_t page_size) {
  return (std::max<size_t>(page_number, 1) - 1) * page_size;
}

}  // namespace engram
