// Binds every setting of the option table (config/option_table.h) to the `serve` subcommand:
// its flag, its ENGRAM_* environment variable and its config-file key, with the table's help and
// tier (advanced settings are listed under their own heading in --help).
// Thread-safety: call once while building the command line; `options` must outlive parsing.
#pragma once

#include <CLI/CLI.hpp>
#include <string>
#include <string_view>

#include "config/serve_options.h"

namespace engram {

void AddServeOptions(CLI::App& serve, ServeOptions& options);

// Binds one text setting of `serve` (e.g. "data-dir") to another command, with the same flag,
// help, default and environment variable, so that the tools that open the server's store (backup,
// export, import) name it as `serve` does.
void AddServeTextOption(CLI::App& command, std::string_view name, std::string& value);

// The list settings from their environment variables (comma-separated: ENGRAM_API_KEYS,
// ENGRAM_ALLOWED_ORIGINS, ...) when neither a flag nor the config file gave the list. An
// ENGRAM_API_KEYS set but empty is kept as one empty key, which Validate refuses, rather than
// taken for "unset".
void ApplyListsFromEnvironment(ServeOptions& options);

}  // namespace engram
