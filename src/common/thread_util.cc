#include "common/thread_util.h"

#include <pthread.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <string>

namespace engram {

void NameThisThread(std::string_view name) {
  std::string n(name.substr(0, 15));
  pthread_setname_np(pthread_self(), n.c_str());
}

namespace {
thread_local bool background = false;
}  // namespace

bool ThisThreadIsBackground() { return background; }

void LowerThisThreadPriority(int increment) {
  if (increment <= 0) return;
  background = true;
  const auto tid = static_cast<id_t>(syscall(SYS_gettid));
  errno = 0;
  const int now = getpriority(PRIO_PROCESS, tid);
  if (errno != 0) return;
  (void)setpriority(PRIO_PROCESS, tid, now + increment);
}

}  // namespace engram
