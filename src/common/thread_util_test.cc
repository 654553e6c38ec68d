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
  bool background = false;
  std::thread([&] {
    LowerThisThreadPriority(5);
    inside = MyNice();
    background = ThisThreadIsBackground();
  }).join();
  EXPECT_EQ(inside, std::min(19, before + 5));
  EXPECT_TRUE(background);
  EXPECT_EQ(MyNice(), before);  // this thread (and the process) unchanged
  EXPECT_FALSE(ThisThreadIsBackground());
}

TEST(ThreadUtilTest, ZeroOrNegativeIncrementChangesNothing) {
  int inside = 0;
  bool background = true;
  const int before = MyNice();
  std::thread([&] {
    LowerThisThreadPriority(0);
    LowerThisThreadPriority(-3);
    inside = MyNice();
    background = ThisThreadIsBackground();
  }).join();
  EXPECT_EQ(inside, before);
  EXPECT_FALSE(background);
}

}  // namespace
}  // namespace engram
