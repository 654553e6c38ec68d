// PDF → text with `pdftotext` (poppler-utils) as a subprocess: poppler is GPL and a parser of
// hostile input, so it runs out of process (a crash is a failed document, not a dead server),
// under a deadline (SIGKILL when over), an address-space limit and an output limit. No shell is
// involved: the program is exec'd by absolute path with a fixed argument vector.
#include <fcntl.h>
#include <fmt/format.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>

#include "extract/documents/document_text.h"

namespace engram {

namespace {

// Removes a temporary file on scope exit.
struct TempFile {
  std::string path;
  int fd = -1;
  ~TempFile() {
    if (fd >= 0) close(fd);
    if (!path.empty()) unlink(path.c_str());
  }
};

Status WriteAll(int fd, std::string_view data) {
  while (!data.empty()) {
    const ssize_t n = write(fd, data.data(), data.size());
    if (n < 0) {
      if (errno == EINTR) continue;
      return Status::Internal(
          fmt::format("cannot write a temporary file: {}", std::strerror(errno)));
    }
    data.remove_prefix(static_cast<size_t>(n));
  }
  return Status::Ok();
}

}  // namespace

Result<std::string> PdfToText(std::string_view pdf, const DocumentLimits& limits) {
  // pdftotext seeks in its input, so the PDF goes to a private temporary file.
  const char* tmpdir = std::getenv("TMPDIR");
  TempFile input;
  std::string templ =
      std::string(tmpdir != nullptr && *tmpdir != '\0' ? tmpdir : "/tmp") + "/engram-pdf-XXXXXX";
  input.fd = mkostemp(templ.data(), O_CLOEXEC);
  if (input.fd < 0) {
    return Status::Internal(
        fmt::format("cannot create a temporary file: {}", std::strerror(errno)));
  }
  input.path = templ;
  ENGRAM_RETURN_IF_ERROR(WriteAll(input.fd, pdf));

  int out_pipe[2];
  if (pipe2(out_pipe, O_CLOEXEC) != 0) {
    return Status::Internal(fmt::format("cannot create a pipe: {}", std::strerror(errno)));
  }
  // Everything the child needs is prepared before fork: only async-signal-safe calls after it.
  const std::string program = limits.pdftotext_path;
  const char* argv[] = {program.c_str(),    "-q", "-enc", "UTF-8", "-eol", "unix",
                        input.path.c_str(), "-",  nullptr};
  const rlimit as_limit{limits.pdf_max_memory_bytes, limits.pdf_max_memory_bytes};
  const int devnull = open("/dev/null", O_RDWR | O_CLOEXEC);
  const pid_t pid = fork();
  if (pid < 0) {
    close(out_pipe[0]);
    close(out_pipe[1]);
    if (devnull >= 0) close(devnull);
    return Status::Internal(fmt::format("cannot start pdftotext: {}", std::strerror(errno)));
  }
  if (pid == 0) {
    dup2(out_pipe[1], STDOUT_FILENO);
    if (devnull >= 0) {
      dup2(devnull, STDIN_FILENO);
      dup2(devnull, STDERR_FILENO);
    }
    setrlimit(RLIMIT_AS, &as_limit);
    execv(argv[0], const_cast<char* const*>(argv));
    _exit(127);
  }
  close(out_pipe[1]);
  if (devnull >= 0) close(devnull);

  std::string out;
  bool timed_out = false, too_large = false;
  const auto deadline = std::chrono::steady_clock::now() + limits.pdf_timeout;
  char buf[64 * 1024];
  for (;;) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) {
      timed_out = true;
      break;
    }
    pollfd p{out_pipe[0], POLLIN, 0};
    const int ready = poll(&p, 1, static_cast<int>(left.count()));
    if (ready < 0 && errno == EINTR) continue;
    if (ready <= 0) {
      timed_out = ready == 0;
      break;
    }
    const ssize_t n = read(out_pipe[0], buf, sizeof(buf));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;  // EOF: the child closed its output
    out.append(buf, static_cast<size_t>(n));
    if (out.size() > limits.max_text_bytes) {
      too_large = true;
      break;
    }
  }
  close(out_pipe[0]);
  if (timed_out || too_large) kill(pid, SIGKILL);
  int wstatus = 0;
  while (waitpid(pid, &wstatus, 0) < 0 && errno == EINTR) {
  }
  if (timed_out) {
    return Status::InvalidParameter(fmt::format(
        "PDF parsing took longer than {} ms and was stopped", limits.pdf_timeout.count()));
  }
  if (too_large) {
    return Status::InvalidParameter(
        fmt::format("extracted text is too large: more than {} bytes", limits.max_text_bytes));
  }
  if (WIFEXITED(wstatus) && WEXITSTATUS(wstatus) == 127) {
    return Status::Internal(fmt::format("cannot run {} (is poppler-utils installed?)", program));
  }
  if (!WIFEXITED(wstatus) || WEXITSTATUS(wstatus) != 0) {
    return Status::InvalidParameter("PDF could not be parsed (corrupt or encrypted)");
  }
  // pdftotext ends pages with a form feed: a page break is a paragraph break.
  for (char& c : out) {
    if (c == '\f') c = '\n';
  }
  return out;
}

}  // namespace engram
