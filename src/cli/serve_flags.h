// Binds every setting of the option table (config/option_table.h) to the `serve` subcommand:
// its flag, its ENGRAM_* environment variable and its config-file key, with the table's help and
// tier (advanced settings are listed under their own heading in --help).
// Thread-safety: call once while building the command line; `options` must outlive parsing.
#pragma once

#include <CLI/CLI.hpp>

#include "config/serve_options.h"

namespace engram {

void AddServeOptions(CLI::App& serve, ServeOptions& options);

// ENGRAM_API_KEYS (comma-separated) when no --api-key or config key was given. Set but empty is
// kept as one empty key, which Validate refuses, rather than taken for "unset".
void ApplyApiKeysFromEnvironment(ServeOptions& options);

}  // namespace engram
