// Fuzz target for SKILL.md parsing (extract/skill_md.h): the YAML front matter with modest limits,
// then rendering and rewriting what was read. Any input must give a value or a Status, never a
// crash, hang, sanitizer report or exception; a parsed front matter's metadata must be a JSON
// object.
//
// Built as a libFuzzer binary with clang (-DENGRAM_FUZZ=ON, scripts/fuzz.sh) and always as a ctest
// over tests/fuzz/corpus/skill_md_fuzz and mutations of it (fuzz_smoke_main.cc).
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <nlohmann/json.hpp>
#include <string_view>

#include "common/json_reader.h"
#include "extract/skill_md.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view input(reinterpret_cast<const char*>(data), size);
  static const engram::SkillMdLimits kLimits{.max_front_matter_bytes = 8 << 10,
                                             .max_front_matter_nodes = 1000,
                                             .max_front_matter_depth = 16,
                                             .max_name_bytes = 128,
                                             .max_description_bytes = 1024,
                                             .max_list_items = 16,
                                             .max_item_bytes = 128};
  auto parsed = engram::ParseSkillMd(input, kLimits);
  if (!parsed.ok()) return 0;
  const auto meta = engram::ReadJson(parsed->front.metadata_json, engram::kStoredJsonLimits);
  if (!meta.ok() || !meta->is_object()) std::abort();
  (void)engram::ParseSkillMd(engram::RenderSkillMd(parsed->front, parsed->body), kLimits);
  (void)engram::RewriteFrontMatter(input, parsed->front);
  return 0;
}
