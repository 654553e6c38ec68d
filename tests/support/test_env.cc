// Linked into every test binary: points ENGRAM_SOURCE_DIR (repo root, for model and dataset files)
// and ENGRAM_BINARY (build/engram, for integration tests) at this build, unless the caller's
// environment already sets them.
#include <stdlib.h>

namespace {

struct TestEnvironmentDefaults {
  TestEnvironmentDefaults() {
    setenv("ENGRAM_SOURCE_DIR", ENGRAM_TEST_SOURCE_DIR, /*overwrite=*/0);
    setenv("ENGRAM_BINARY", ENGRAM_TEST_BINARY, /*overwrite=*/0);
  }
};
const TestEnvironmentDefaults kDefaults;

}  // namespace
