// ServerProcess: runs a real `engram serve` child process for HTTP-level integration tests.
//
// The binary comes from the ENGRAM_BINARY environment variable (set by ctest through
// engram_test()). Each ServerProcess owns a fresh temporary data directory (mkdtemp) that is
// removed on destruction unless KeepDataDir(true) was called. stdout and stderr of the child go to
// one pipe that a reader thread drains for the whole life of the process, so a chatty server never
// blocks on a full pipe and a failing start can show everything the server printed.
//
// Thread-safety: Start/Stop/Kill/Restart and the destructor must be called from one thread; pid(),
// port(), data_dir() and Output() may be read from others while the process runs.
#pragma once

#include <gtest/gtest.h>
#include <sys/types.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

namespace engram::testing {

// True when the tests, and so the server built beside them, are built with AddressSanitizer
// (scripts/sanitize.sh): its shadow memory reserves terabytes of address space, and freed memory
// waits in its quarantine, so a memory cap stops the server from starting and the server's
// resident size no longer says what it holds. Tests of memory bounds check only the behaviour then.
#if defined(__SANITIZE_ADDRESS__)
inline constexpr bool kAddressSanitizer = true;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
inline constexpr bool kAddressSanitizer = true;
#else
inline constexpr bool kAddressSanitizer = false;
#endif
#else
inline constexpr bool kAddressSanitizer = false;
#endif

// Resident memory of a process in KiB (VmRSS), or -1 when /proc cannot tell.
long RssKib(pid_t pid);

// The path in ENGRAM_BINARY when that file exists and is executable, else nullopt.
std::optional<std::string> EngramBinary();

// Message used by GTEST_SKIP when the binary is missing.
std::string MissingBinaryMessage();

struct ServerOptions {
  // The --listen value; the default lets the kernel pick a free loopback port.
  std::string listen = "127.0.0.1:0";
  // Extra arguments after `serve --listen LISTEN --data-dir DIR`, e.g. {"--api-key", "k1"}.
  std::vector<std::string> extra_args;
  // Environment overrides on top of the test's environment. ENGRAM_API_KEYS is removed from the
  // inherited environment unless set here, so the outer shell cannot switch on auth by accident.
  std::map<std::string, std::string> env;
  // Use this existing data directory (e.g. one another ServerProcess kept) instead of a new
  // temporary one. It is not removed on destruction unless KeepDataDir(false) is called.
  std::string data_dir;
  // How long Start() waits for the "listening on HOST:PORT" line.
  std::chrono::milliseconds start_timeout{20000};
  // When set, the child's private writable memory (RLIMIT_DATA: heap, anonymous mappings, thread
  // stacks) is capped at this many MiB, so a test of hostile input that the server failed to
  // bound ends in the server's allocation failure, not in the machine swapping. Not applied under
  // AddressSanitizer (kAddressSanitizer), whose shadow memory alone exceeds any such cap.
  std::optional<size_t> memory_limit_mb;
};

// How a stopped child ended.
struct ExitInfo {
  bool exited = false;    // waitpid reaped it within the timeout
  bool signaled = false;  // killed by a signal (then `signal` is set)
  int exit_code = -1;     // valid when exited && !signaled
  int signal = 0;
};

class ServerProcess {
 public:
  explicit ServerProcess(ServerOptions options = {});
  ~ServerProcess();  // SIGKILLs a running child; removes the data dir unless kept.

  ServerProcess(const ServerProcess&) = delete;
  ServerProcess& operator=(const ServerProcess&) = delete;

  // fork/exec the server and wait for its listening line. On failure the result carries the
  // captured output. Must not be running.
  ::testing::AssertionResult Start();

  // SIGTERM, then waitpid for up to `timeout`; SIGKILLs the child if it did not exit in time
  // (ExitInfo::exited is false in that case).
  ExitInfo Stop(std::chrono::milliseconds timeout = std::chrono::seconds(10));

  // SIGKILL and reap. The data dir is left as the kill found it.
  void Kill();

  // Stop (graceful) if running, then Start again on the same data dir. The port changes.
  ::testing::AssertionResult Restart();

  bool running() const { return pid_ > 0; }
  pid_t pid() const { return pid_; }
  int port() const { return port_; }
  std::string BaseUrl() const;  // "http://127.0.0.1:PORT"
  const std::string& data_dir() const { return data_dir_; }
  void KeepDataDir(bool keep) { keep_data_dir_ = keep; }

  // Everything the child has printed so far (all runs, stdout and stderr interleaved).
  std::string Output() const;

 private:
  void ReaderLoop(int fd);
  void JoinReader();
  ExitInfo WaitFor(std::chrono::milliseconds timeout);

  ServerOptions options_;
  std::string data_dir_;
  bool keep_data_dir_ = false;
  pid_t pid_ = -1;
  int port_ = 0;

  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::string output_;                    // guarded by mu_
  size_t run_output_start_ = 0;           // guarded by mu_: where the current run's output begins
  bool reader_eof_ = false;               // guarded by mu_
  std::atomic<bool> stop_reader_{false};  // set once the child is reaped
  std::thread reader_;
};

}  // namespace engram::testing
