#include "common/thread_util.h"

#include <gtest/gtest.h>
#include <pthread.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <string>
#include <thread>

namespace engram {
namespace {

int MyNice() { return getpriority(PRIO_PROCESS, static_cast<id_t>(syscall(SYS_gettid))); }

TEST(ThreadUtilTest, NamesTheCallingThreadTruncatedTo15Bytes) {
  std::string seen;
  std::thread([&] {
    NameThisThread("a-very-long-thread-name");
    char buf[32] = {};
    pthread_getname_np(pthread_self(), buf, sizeof buf);
    seen = buf;
  }).join();
  EXPECT_EQ(seen, "a-very-long-thr");
}

TEST(ThreadUtilTest, LowersOnlyTheCallingThread) {
  const int before = MyNice();
  int inside = 0;
  std::thread([&] {
    LowerThisThreadPriority(5);
    inside = MyNice();
  }).join();
  EXPECT_EQ(inside, std::min(19, before + 5));
  EXPECT_EQ(MyNice(), before);  // this thread (and the process) unchanged
}

TEST(ThreadUtilTest, ZeroOrNegativeIncrementChangesNothing) {
  int inside = 0;
  const int before = MyNice();
  std::thread([&] {
    LowerThisThreadPriority(0);
    LowerThisThreadPriority(-3);
    inside = MyNice();
  }).join();
  EXPECT_EQ(inside, before);
}

}  // namespace
}  // namespace engram
