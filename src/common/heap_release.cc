#include "common/heap_release.h"

#include <cstdlib>  // defines __GLIBC__ where glibc is the C library
#if defined(__GLIBC__)
#include <malloc.h>
#endif

namespace engram {

void ReleaseFreedHeap() {
#if defined(__GLIBC__)
  malloc_trim(0);
#endif
}

ReleaseHeapOnExit::~ReleaseHeapOnExit() {
  if (records_ >= kReleaseHeapAfterRecords) ReleaseFreedHeap();
}

}  // namespace engram
