// PythonFake: runs one of the fake endpoints in tests/support (fake_llm.py, fake_doc_server.py) as
// a child process for HTTP-level tests. The script prints "LISTENING <port>" once it listens.
// Thread-safety: construct and destroy on one thread; port() may be read from any.
#pragma once

#include <sys/types.h>

#include <string>
#include <vector>

namespace engram::testing {

class PythonFake {
 public:
  // Starts `python3 tests/support/<script> <args...> --port 0`; port() stays 0 when python3 or the
  // script is missing or the script did not report a port.
  PythonFake(const std::string& script, const std::vector<std::string>& args = {});
  ~PythonFake();  // SIGTERM and reap
  PythonFake(const PythonFake&) = delete;
  PythonFake& operator=(const PythonFake&) = delete;

  int port() const { return port_; }
  // "http://127.0.0.1:<port><path>"
  std::string Url(const std::string& path = "") const;

 private:
  pid_t pid_ = -1;
  int port_ = 0;
};

}  // namespace engram::testing
