#include "common/heap_release.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <memory>
#include <vector>

namespace engram {
namespace {

// Resident bytes of this process (/proc/self/statm); 0 where it cannot be read.
size_t ResidentBytes() {
  std::FILE* f = std::fopen("/proc/self/statm", "r");
  if (f == nullptr) return 0;
  unsigned long size = 0, resident = 0;
  const int got = std::fscanf(f, "%lu %lu", &size, &resident);
  std::fclose(f);
  return got == 2 ? resident * static_cast<size_t>(sysconf(_SC_PAGESIZE)) : 0;
}

bool RunsUnderASanitizer() {
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
  return true;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
  return true;
#endif
#endif
  return false;
}

// 256 MB of 2 KiB blocks (a load's records' vectors), every 64th kept so that the freed ones sit
// between live blocks, where the allocator does not trim them by itself.
class HeapReleaseTest : public ::testing::Test {
 protected:
  static constexpr size_t kBlock = 2048;
  static constexpr size_t kBlocks = (256u << 20) / kBlock;

  void SetUp() override {
#if !defined(__GLIBC__)
    GTEST_SKIP() << "only glibc keeps freed blocks";
#endif
    if (RunsUnderASanitizer()) GTEST_SKIP() << "a sanitizer's allocator keeps its own memory";
    if (ResidentBytes() == 0) GTEST_SKIP() << "no /proc/self/statm";
  }

  // Allocates and touches the blocks, then frees all but every 64th; returns the kept ones.
  static std::vector<std::unique_ptr<char[]>> FreeMostOf256MB() {
    std::vector<std::unique_ptr<char[]>> blocks(kBlocks);
    for (auto& b : blocks) {
      b = std::make_unique<char[]>(kBlock);
      b[0] = b[kBlock - 1] = 1;
    }
    std::vector<std::unique_ptr<char[]>> kept;
    for (size_t i = 0; i < kBlocks; ++i) {
      if (i % 64 == 63) kept.push_back(std::move(blocks[i]));
    }
    return kept;  // `blocks` frees the rest
  }
};

TEST_F(HeapReleaseTest, FreedBlocksBetweenLiveOnesLeaveTheResidentSize) {
  const auto kept = FreeMostOf256MB();
  const size_t before = ResidentBytes();
  ReleaseFreedHeap();
  const size_t after = ResidentBytes();
  EXPECT_LT(after + (128u << 20), before) << "before " << before << ", after " << after;
}

TEST_F(HeapReleaseTest, OnExitReleasesOnlyAfterEnoughRecords) {
  auto kept = FreeMostOf256MB();
  size_t before = ResidentBytes();
  {
    ReleaseHeapOnExit few;
    few.Held(kReleaseHeapAfterRecords - 1);
  }
  EXPECT_GT(ResidentBytes() + (64u << 20), before) << "released after too few records";
  {
    ReleaseHeapOnExit many;
    many.Held(kReleaseHeapAfterRecords);
  }
  EXPECT_LT(ResidentBytes() + (128u << 20), before);
}

}  // namespace
}  // namespace engram
