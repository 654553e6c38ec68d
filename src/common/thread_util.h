// Per-thread settings for the threads Engram starts: a name (shown by top -H, ps -L, gdb and perf,
// so an operator can tell the HTTP workers from the event workers); for background work, a lower
// scheduling priority and a mark shared resources can read (ThisThreadIsBackground).
// Thread-safety: each function affects only the calling thread.
#pragma once

#include <string_view>

namespace engram {

// Names the calling thread; Linux keeps the first 15 bytes.
void NameThisThread(std::string_view name);

// Raises the calling thread's nice value by `increment` (Linux schedules threads, not processes,
// so this leaves the rest of the process alone). Best effort: an error is ignored, the thread then
// keeps its priority. Marks the thread as background work either way (ThisThreadIsBackground).
void LowerThisThreadPriority(int increment);

// Whether the calling thread called LowerThisThreadPriority with a positive increment: it runs
// background work, which shared resources may serve after requests (see BatchingEmbedder).
bool ThisThreadIsBackground();

}  // namespace engram
