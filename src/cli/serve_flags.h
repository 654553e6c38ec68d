// Binds every setting of the option table (config/option_table.h) to the `serve` subcommand:
// its flag, its ENGRAM_* environment variable and its config-file key, with the table's help and
// tier (advanced settings are listed under their own heading in --help).
// Thread-safety: call once while building the command line; `options` must outlive parsing.
#pragma once

#include <CLI/CLI.hpp>

#include "config/serve_options.h"

namespace engram {

void AddServeOptions(CLI::App& serve, ServeOptions& options);

// The list settings from their environment variables (comma-separated: ENGRAM_API_KEYS,
// ENGRAM_ALLOWED_ORIGINS, ...) when neither a flag nor the config file gave the list. An
// ENGRAM_API_KEYS set but empty is kept as one empty key, which Validate refuses, rather than
// taken for "unset".
void ApplyListsFromEnvironment(ServeOptions& options);

}  // namespace engram
