#include "cli/serve_flags.h"

#include <cstdlib>
#include <sstream>
#include <string>
#include <type_traits>

#include "config/option_table.h"

namespace engram {

void AddServeOptions(CLI::App& serve, ServeOptions& options) {
  for (const OptionSpec& spec : ServeOptionTable()) {
    const std::string flag = "--" + std::string(spec.name);
    const std::string help(spec.help);
    const std::string group = spec.tier == OptionTier::kAdvanced ? "Advanced" : "Options";
    std::visit(
        [&](auto member) {
          auto& value = options.*member;
          using T = std::decay_t<decltype(value)>;
          CLI::Option* option = nullptr;
          if constexpr (std::is_same_v<T, bool>) {
            // A setting that is on by default is switched off with --no-NAME.
            option = serve.add_flag(value ? flag + ",!--no-" + std::string(spec.name) : flag, value,
                                    help);
          } else {
            option = serve.add_option(flag, value, help);
          }
          option->group(group)->capture_default_str();
          // The key list's variable is comma-separated (ApplyApiKeysFromEnvironment).
          if constexpr (!std::is_same_v<T, std::vector<std::string>>) {
            option->envname(OptionEnvName(spec));
          }
        },
        spec.field);
  }
}

void ApplyApiKeysFromEnvironment(ServeOptions& options) {
  if (!options.api_keys.empty()) return;
  const char* env = std::getenv("ENGRAM_API_KEYS");
  if (env == nullptr) return;
  std::stringstream list(env);
  for (std::string item; std::getline(list, item, ',');) {
    if (!item.empty()) options.api_keys.push_back(item);  // a blank one is refused by Validate
  }
  if (options.api_keys.empty()) options.api_keys.emplace_back();
}

}  // namespace engram
