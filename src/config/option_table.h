// The one declaration of every `engram serve` setting: its name (the long flag, the config-file
// key, and upper-cased with '_' the ENGRAM_* environment variable), the ServeOptions field it
// fills, its help text, its tier and the values it accepts. The command line, the environment
// and the config file are bound from this table (cli/serve_flags.h), its ranges and choices are
// checked here for all three alike, and docs/configuration.md is generated from it. Each feature
// declares its own settings (config/settings/, one file per feature); the table joins them.
//
// Tiers: operator settings are what a deployment sets (address, keys, store, endpoints, limits);
// advanced settings are retrieval tuning and internals, kept out of the operator's way in the help
// and the docs, with built-in defaults the benchmarks measured.
// Thread-safety: the table is immutable.
#pragma once

#include <cstdint>
#include <limits>
#include <span>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "common/status.h"
#include "config/serve_options.h"

namespace engram {

enum class OptionTier { kOperator, kAdvanced };

using OptionField =
    std::variant<std::string ServeOptions::*, std::vector<std::string> ServeOptions::*,
                 int ServeOptions::*, int64_t ServeOptions::*, uint64_t ServeOptions::*,
                 double ServeOptions::*, bool ServeOptions::*>;

struct OptionSpec {
  std::string_view name;  // "max-body-bytes": flag --max-body-bytes, key max-body-bytes
  OptionField field;
  std::string_view help;
  OptionTier tier = OptionTier::kOperator;
  // Numeric settings: the inclusive range of accepted values.
  double min = -std::numeric_limits<double>::infinity();
  double max = std::numeric_limits<double>::infinity();
  // String settings with a fixed set of values (an enum); empty: any string.
  std::vector<std::string_view> choices;
  // The environment variable when it is not ENGRAM_ + the upper-cased name (api-key takes a
  // comma-separated list in ENGRAM_API_KEYS).
  std::string_view env;
};

// Every setting, in the order of the help and the docs.
std::span<const OptionSpec> ServeOptionTable();

// The setting's environment variable, e.g. ENGRAM_MAX_BODY_BYTES.
std::string OptionEnvName(const OptionSpec& spec);

// Each value within its setting's range and choices; the message names the flag, the accepted
// values and what was given, e.g. `--fusion must be one of zscore, score, rrf; got "z"`.
Status CheckOptionValues(const ServeOptions& options);

// docs/configuration.md: every setting by tier, with its flag, variable, default and help.
std::string ConfigurationMarkdown();

}  // namespace engram
