#include "python_fake.h"

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>

namespace engram::testing {

PythonFake::PythonFake(const std::string& script, const std::vector<std::string>& args) {
  const char* src = getenv("ENGRAM_SOURCE_DIR");
  const std::string path = std::string(src ? src : ".") + "/tests/support/" + script;
  if (!std::filesystem::exists(path)) return;
  std::vector<std::string> argv_storage = {"python3", path};
  argv_storage.insert(argv_storage.end(), args.begin(), args.end());
  argv_storage.insert(argv_storage.end(), {"--port", "0"});
  std::vector<char*> argv;
  for (auto& a : argv_storage) argv.push_back(a.data());
  argv.push_back(nullptr);
  int fds[2];
  if (pipe(fds) != 0) return;
  pid_ = fork();
  if (pid_ == 0) {
    dup2(fds[1], STDOUT_FILENO);
    close(fds[0]);
    close(fds[1]);
    execvp("python3", argv.data());
    _exit(127);
  }
  close(fds[1]);
  FILE* out = fdopen(fds[0], "r");
  char line[128] = {};
  if (out && fgets(line, sizeof line, out)) sscanf(line, "LISTENING %d", &port_);
  if (out) fclose(out);
}

PythonFake::~PythonFake() {
  if (pid_ > 0) {
    kill(pid_, SIGTERM);
    waitpid(pid_, nullptr, 0);
  }
}

std::string PythonFake::Url(const std::string& path) const {
  return "http://127.0.0.1:" + std::to_string(port_) + path;
}

}  // namespace engram::testing
