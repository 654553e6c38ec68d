// Fuzz target for skill ZIP archives (extract/skill_archive.h) with small limits: libarchive's
// reading from memory, the entry checks, SKILL.md and _meta.json of every skill. Any input must
// give a value or a Status, never a crash, hang, sanitizer report or exception.
//
// Built as a libFuzzer binary with clang (-DENGRAM_FUZZ=ON, scripts/fuzz.sh) and always as a ctest
// over tests/fuzz/corpus/zip_reader_fuzz and mutations of it (fuzz_smoke_main.cc).
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "extract/skill_archive.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view input(reinterpret_cast<const char*>(data), size);
  static const engram::SkillArchiveLimits kLimits = [] {
    engram::SkillArchiveLimits l;
    l.max_files = 16;
    l.max_total_bytes = 1 << 20;
    l.max_path_bytes = 128;
    l.skill_md.max_front_matter_bytes = 4 << 10;
    l.skill_md.max_front_matter_nodes = 500;
    l.skill_md.max_front_matter_depth = 16;
    return l;
  }();
  (void)engram::ReadZipArchive(input, kLimits);
  (void)engram::ParseSkillArchive(input, kLimits);
  return 0;
}
