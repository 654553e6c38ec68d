// Skills: the limits of an imported skill ZIP, extraction threads.
#include "config/settings/settings.h"

namespace engram {

std::vector<OptionSpec> SkillSettings() {
  // clang-format off
  return {
      {.name = "skill-max-files", .field = &ServeOptions::skill_max_files, .help = "files an imported skill ZIP may hold", .tier = OptionTier::kAdvanced, .min = 1, .max = 100000},
      {.name = "skill-max-bytes", .field = &ServeOptions::skill_max_bytes, .help = "decompressed bytes an imported skill ZIP may hold (zip bomb limit)", .tier = OptionTier::kAdvanced, .min = 1024, .max = 4294967296},
      {.name = "skill-workers", .field = &ServeOptions::skill_workers, .help = "threads running skill extraction", .tier = OptionTier::kAdvanced, .min = 1, .max = 64},
  };
  // clang-format on
}

}  // namespace engram
