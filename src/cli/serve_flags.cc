#include "cli/serve_flags.h"

#include <cstdlib>
#include <sstream>
#include <string>
#include <type_traits>
#include <variant>
#include <vector>

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
          // List variables are comma-separated (ApplyListsFromEnvironment).
          if constexpr (!std::is_same_v<T, std::vector<std::string>>) {
            option->envname(OptionEnvName(spec));
          }
        },
        spec.field);
  }
}

void AddServeTextOption(CLI::App& command, std::string_view name, std::string& value) {
  const ServeOptions defaults;
  for (const OptionSpec& spec : ServeOptionTable()) {
    using TextMember = std::string ServeOptions::*;
    const TextMember* member = std::get_if<TextMember>(&spec.field);
    if (spec.name != name || member == nullptr) continue;
    value = defaults.**member;
    command.add_option("--" + std::string(spec.name), value, std::string(spec.help))
        ->envname(OptionEnvName(spec))
        ->capture_default_str();
    return;
  }
}

void ApplyListsFromEnvironment(ServeOptions& options) {
  for (const OptionSpec& spec : ServeOptionTable()) {
    using ListMember = std::vector<std::string> ServeOptions::*;
    const ListMember* member = std::get_if<ListMember>(&spec.field);
    if (member == nullptr) continue;
    std::vector<std::string>& list = options.**member;
    if (!list.empty()) continue;
    const std::string name = OptionEnvName(spec);
    const char* env = std::getenv(name.c_str());
    if (env == nullptr) continue;
    std::stringstream items(env);
    for (std::string item; std::getline(items, item, ',');) {
      if (!item.empty()) list.push_back(item);
    }
    // A key list set but empty is a mistake Validate names (an empty key), not development mode.
    if (list.empty() && *member == &ServeOptions::api_keys) list.emplace_back();
  }
}

}  // namespace engram
