// Handing freed heap memory back to the system after a large working set.
//
// glibc keeps freed blocks below its mmap threshold (128 KiB at first, raised as larger blocks
// are freed) in its arenas for reuse, and returns only a free top of the heap on its own: a
// process that once held a large working set of small allocations keeps that resident size after
// freeing it. A shard's load holds every record of its scope at once (ids, texts, 2 KiB float32
// vectors) before indexing them. Measured after a 300,000-memory Leaderboard scope's load and 760
// searches: 1,529 MB resident without the release, 713 MB with it; at a million memories 4,756
// against 2,130 MB (docs/benchmarks.md, peers side by side).
//
// The release is not free: glibc returns the pages one free block at a time, holding the arena's
// lock (a 300,000-memory load's first search took 13.2 s instead of 11.2 on a 2-core machine).
// Allocations of other threads in the arena being released wait meanwhile, as do callers holding
// a lock around the load (a knowledge base's document lock). It follows large loads only, never
// an ordinary request.
//
// Thread-safety: safe from any thread. Outside glibc it does nothing.
#pragma once

#include <cstddef>

namespace engram {

// Returns the heap memory freed so far to the system, where the allocator keeps it.
void ReleaseFreedHeap();

// A piece of work holding at least this many records (a shard's load) is followed by
// ReleaseFreedHeap: at 512 dimensions their float32 vectors alone held 20 MB.
inline constexpr size_t kReleaseHeapAfterRecords = 10000;

// Declared before a large working set's locals, so its destructor runs after they are freed (and
// after the locks the function takes after it are released): calls ReleaseFreedHeap when Held was
// told of at least kReleaseHeapAfterRecords records. Not thread-safe; one per function call.
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
