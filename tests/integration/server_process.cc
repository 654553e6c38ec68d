#include "server_process.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>

extern char** environ;

namespace engram::testing {

namespace {

constexpr std::string_view kListening = "listening on ";

// Parses the port out of "... listening on HOST:PORT ..." in `text`; 0 when not (yet) present.
int ParseListeningPort(std::string_view text) {
  size_t at = text.find(kListening);
  if (at == std::string_view::npos) return 0;
  std::string_view rest = text.substr(at + kListening.size());
  size_t end = rest.find_first_of(" \t\r\n");
  if (end == std::string_view::npos) return 0;  // line not complete yet
  std::string_view addr = rest.substr(0, end);
  size_t colon = addr.rfind(':');
  if (colon == std::string_view::npos) return 0;
  int port = 0;
  for (char c : addr.substr(colon + 1)) {
    if (c < '0' || c > '9') break;
    port = port * 10 + (c - '0');
    if (port > 65535) return 0;
  }
  return port;
}

}  // namespace

std::optional<std::string> EngramBinary() {
  const char* path = std::getenv("ENGRAM_BINARY");
  if (path == nullptr || *path == '\0') return std::nullopt;
  if (::access(path, X_OK) != 0) return std::nullopt;
  struct stat st {};
  if (::stat(path, &st) != 0 || !S_ISREG(st.st_mode)) return std::nullopt;
  return std::string(path);
}

std::string MissingBinaryMessage() {
  const char* path = std::getenv("ENGRAM_BINARY");
  return std::string("engram binary not found (ENGRAM_BINARY=") + (path ? path : "<unset>") +
         "); build the `engram` target or point ENGRAM_BINARY at it";
}

ServerProcess::ServerProcess(ServerOptions options) : options_(std::move(options)) {
  if (!options_.data_dir.empty()) {
    data_dir_ = options_.data_dir;
    keep_data_dir_ = true;
    return;
  }
  std::string tmpl = (std::filesystem::temp_directory_path() / "engram-it-XXXXXX").string();
  if (::mkdtemp(tmpl.data()) != nullptr) data_dir_ = tmpl;
}

ServerProcess::~ServerProcess() {
  if (running()) Kill();
  JoinReader();
  if (!keep_data_dir_ && !data_dir_.empty()) {
    std::error_code ec;
    std::filesystem::remove_all(data_dir_, ec);
  }
}

std::string ServerProcess::BaseUrl() const { return "http://127.0.0.1:" + std::to_string(port_); }

std::string ServerProcess::Output() const {
  std::lock_guard<std::mutex> lock(mu_);
  return output_;
}

void ServerProcess::ReaderLoop(int fd) {
  // Polls so that a grandchild still holding the pipe cannot keep JoinReader() waiting forever:
  // once the child is reaped (stop_reader_), whatever is left is drained without blocking.
  char buf[4096];
  for (;;) {
    pollfd pfd{fd, POLLIN, 0};
    int pr = ::poll(&pfd, 1, 100);
    if (pr < 0 && errno != EINTR) break;
    if (pr <= 0) {
      if (stop_reader_.load()) break;
      continue;
    }
    ssize_t n = ::read(fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    {
      std::lock_guard<std::mutex> lock(mu_);
      output_.append(buf, static_cast<size_t>(n));
    }
    cv_.notify_all();
  }
  ::close(fd);
  {
    std::lock_guard<std::mutex> lock(mu_);
    reader_eof_ = true;
  }
  cv_.notify_all();
}

void ServerProcess::JoinReader() {
  stop_reader_.store(true);
  if (reader_.joinable()) reader_.join();
  stop_reader_.store(false);
}

::testing::AssertionResult ServerProcess::Start() {
  if (running()) return ::testing::AssertionFailure() << "server already running";
  if (data_dir_.empty()) return ::testing::AssertionFailure() << "mkdtemp failed";
  std::optional<std::string> binary = EngramBinary();
  if (!binary) return ::testing::AssertionFailure() << MissingBinaryMessage();
  JoinReader();  // the previous run's reader ends at its EOF

  // Everything the child needs is built before fork: no allocation between fork and exec.
  std::vector<std::string> args = {*binary,         "serve",      "--listen",
                                   options_.listen, "--data-dir", data_dir_};
  args.insert(args.end(), options_.extra_args.begin(), options_.extra_args.end());
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);

  std::map<std::string, std::string> env_map;
  for (char** e = environ; *e != nullptr; ++e) {
    std::string_view kv(*e);
    size_t eq = kv.find('=');
    if (eq == std::string_view::npos) continue;
    env_map[std::string(kv.substr(0, eq))] = std::string(kv.substr(eq + 1));
  }
  env_map.erase("ENGRAM_API_KEYS");
  for (const auto& [k, v] : options_.env) env_map[k] = v;
  std::vector<std::string> env_strings;
  for (const auto& [k, v] : env_map) env_strings.push_back(k + "=" + v);
  std::vector<char*> envp;
  for (auto& s : env_strings) envp.push_back(s.data());
  envp.push_back(nullptr);

  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0)
    return ::testing::AssertionFailure() << "pipe2: " << std::strerror(errno);
  pid_t parent = ::getpid();
  pid_t pid = ::fork();
  if (pid < 0) {
    ::close(fds[0]);
    ::close(fds[1]);
    return ::testing::AssertionFailure() << "fork: " << std::strerror(errno);
  }
  if (pid == 0) {
    // Die with the test process (a crashed or aborted test must not leave servers behind). The
    // signal follows the forking thread: Start() is called from the test's main thread.
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (::getppid() != parent) ::_exit(126);
    ::dup2(fds[1], STDOUT_FILENO);
    ::dup2(fds[1], STDERR_FILENO);
    int devnull = ::open("/dev/null", O_RDONLY);
    if (devnull >= 0) ::dup2(devnull, STDIN_FILENO);
    if (options_.memory_limit_mb && !kAddressSanitizer) {
      const rlimit limit{.rlim_cur = *options_.memory_limit_mb << 20,
                         .rlim_max = *options_.memory_limit_mb << 20};
      ::setrlimit(RLIMIT_DATA, &limit);
    }
    ::execve(argv[0], argv.data(), envp.data());
    const char msg[] = "execve failed\n";
    ssize_t ignored = ::write(STDERR_FILENO, msg, sizeof msg - 1);
    (void)ignored;
    ::_exit(127);
  }
  ::close(fds[1]);
  pid_ = pid;
  port_ = 0;
  {
    std::lock_guard<std::mutex> lock(mu_);
    run_output_start_ = output_.size();
    reader_eof_ = false;
  }
  reader_ = std::thread([this, fd = fds[0]] { ReaderLoop(fd); });

  auto deadline = std::chrono::steady_clock::now() + options_.start_timeout;
  std::unique_lock<std::mutex> lock(mu_);
  for (;;) {
    int port = ParseListeningPort(std::string_view(output_).substr(run_output_start_));
    if (port > 0) {
      port_ = port;
      return ::testing::AssertionSuccess();
    }
    if (reader_eof_ || std::chrono::steady_clock::now() >= deadline) break;
    cv_.wait_until(lock, std::min(deadline, std::chrono::steady_clock::now() +
                                                std::chrono::milliseconds(100)));
  }
  bool eof = reader_eof_;
  std::string out = output_.substr(run_output_start_);
  lock.unlock();
  Kill();
  return ::testing::AssertionFailure()
         << (eof ? "server exited before printing 'listening on HOST:PORT'"
                 : "no 'listening on HOST:PORT' line within the start timeout")
         << "; args:" <<
         [&] {
           std::string s;
           for (size_t i = 1; i < args.size(); ++i) s += " " + args[i];
           return s;
         }()
         << "\n--- server output ---\n"
         << out << "\n--- end ---";
}

ExitInfo ServerProcess::WaitFor(std::chrono::milliseconds timeout) {
  ExitInfo info;
  auto deadline = std::chrono::steady_clock::now() + timeout;
  for (;;) {
    int status = 0;
    pid_t r = ::waitpid(pid_, &status, WNOHANG);
    if (r == pid_) {
      info.exited = true;
      if (WIFSIGNALED(status)) {
        info.signaled = true;
        info.signal = WTERMSIG(status);
      } else if (WIFEXITED(status)) {
        info.exit_code = WEXITSTATUS(status);
      }
      return info;
    }
    if (r < 0 && errno != EINTR) return info;
    if (std::chrono::steady_clock::now() >= deadline) return info;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
}

ExitInfo ServerProcess::Stop(std::chrono::milliseconds timeout) {
  if (!running()) return {};
  ::kill(pid_, SIGTERM);
  ExitInfo info = WaitFor(timeout);
  if (!info.exited) {
    ::kill(pid_, SIGKILL);
    WaitFor(std::chrono::seconds(10));
  }
  pid_ = -1;
  JoinReader();
  return info;
}

void ServerProcess::Kill() {
  if (!running()) return;
  ::kill(pid_, SIGKILL);
  WaitFor(std::chrono::seconds(10));
  pid_ = -1;
  JoinReader();
}

::testing::AssertionResult ServerProcess::Restart() {
  if (running()) {
    ExitInfo info = Stop();
    if (!info.exited)
      return ::testing::AssertionFailure() << "server did not stop on SIGTERM within 10 s";
  }
  return Start();
}

long RssKib(pid_t pid) {
  std::ifstream status("/proc/" + std::to_string(pid) + "/status");
  std::string line;
  while (std::getline(status, line)) {
    if (line.rfind("VmRSS:", 0) == 0) return std::stol(line.substr(6));
  }
  return -1;
}

}  // namespace engram::testing
