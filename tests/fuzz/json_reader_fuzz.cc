// Fuzz target for ReadJson (common/json_reader.h) with small limits: any input must give a value
// or a Status, never a crash, hang, sanitizer report or exception; a message must be valid UTF-8
// (it may reach an HTTP answer); and whatever is accepted must dump and read back to the same
// value.
//
// Built as a libFuzzer binary with clang (-DENGRAM_FUZZ=ON, scripts/fuzz.sh) and always as a ctest
// that runs it over tests/fuzz/corpus/json_reader_fuzz and mutations of it (fuzz_smoke_main.cc).
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <nlohmann/json.hpp>
#include <string_view>

#include "common/json_reader.h"
#include "common/utf8.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view input(reinterpret_cast<const char*>(data), size);
  static constexpr engram::JsonReadLimits kStrict{.what = "fuzz input",
                                                  .max_bytes = 1 << 16,
                                                  .max_depth = 16,
                                                  .refuse_duplicate_keys = true,
                                                  .refuse_nul = true};
  static constexpr engram::JsonReadLimits kLenient{
      .what = "", .max_bytes = 1 << 16, .max_depth = 4, .refuse_duplicate_keys = false};
  static constexpr engram::JsonReadLimits kReread{.max_bytes = 1 << 24, .max_depth = 16};
  for (const engram::JsonReadLimits* limits : {&kStrict, &kLenient}) {
    auto r = engram::ReadJson(input, *limits);
    if (!r.ok()) {
      const std::string& message = r.status().message();
      if (message.empty() || !engram::IsValidUtf8(message)) std::abort();
      continue;
    }
    auto again = engram::ReadJson(engram::DumpJson(*r), kReread);
    if (!again.ok() || *again != *r) std::abort();
  }
  return 0;
}
