// Handing freed heap memory back to the system after a large working set.
//
// glibc keeps freed small blocks (below its 128 KiB mmap threshold) in its arenas for reuse, and
// returns only a free top of the heap on its own: a process that once held a large working set of
// small allocations keeps that resident size after freeing it. A shard's load holds every record
// of its scope at once (ids, texts, 2 KiB float32 vectors) before indexing them: after a
// 300,000-memory scope's load the server stayed at 1,529 MB resident, 695 MB once released
// (docs/benchmarks.md, peers side by side).
//
// Thread-safety: safe from any thread. Releasing takes each arena's lock in turn, so allocations
// on other threads wait for a moment (milliseconds per GB of heap): it follows large pieces of
// work only, never a request's. Outside glibc it does nothing.
#pragma once

#include <cstddef>

namespace engram {

// Returns the heap memory freed so far to the system, where the allocator keeps it.
void ReleaseFreedHeap();

// A piece of work holding at least this many records (a shard's load) is followed by
// ReleaseFreedHeap: at 512 dimensions their float32 vectors alone held 20 MB.
inline constexpr size_t kReleaseHeapAfterRecords = 10000;

// Declared before a large working set's locals, so its destructor runs after they are freed (and
// after the locks declared after it are released): calls ReleaseFreedHeap when Held was told of at
// least kReleaseHeapAfterRecords records. Not thread-safe; one per function call.
class ReleaseHeapOnExit {
 public:
  ReleaseHeapOnExit() = default;
  ~ReleaseHeapOnExit();
  ReleaseHeapOnExit(const ReleaseHeapOnExit&) = delete;
  ReleaseHeapOnExit& operator=(const ReleaseHeapOnExit&) = delete;

  void Held(size_t records) { records_ = records; }

 private:
  size_t records_ = 0;
};

}  // namespace engram
