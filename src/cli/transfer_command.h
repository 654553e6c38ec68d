// `engram export` and `engram import`: the command line of transfer/exporter.h and
// transfer/importer.h, over the store `serve` would open (SQLite in --data-dir, or PostgreSQL at
// --store-url).
// Thread-safety: run from main, one at a time.
#pragma once

#include <CLI/CLI.hpp>
#include <ostream>
#include <string>
#include <utility>

#include "transfer/exporter.h"

namespace engram {

struct TransferCommandOptions {
  std::string data_dir;   // the server's --data-dir
  std::string store_url;  // the server's --store-url; empty: SQLite in data_dir
  std::string path;       // export: the file written ("-": standard output); import: the file read
  transfer::ExportOptions exporting;
  bool check_only = false;  // import: read and check the file, write nothing
};

// Adds the two subcommands to `app`, bound to `export_options` and `import_options`; returns them
// so that main can tell which one was parsed.
std::pair<CLI::App*, CLI::App*> AddTransferCommands(CLI::App& app,
                                                    TransferCommandOptions& export_options,
                                                    TransferCommandOptions& import_options);

// Run the command: a summary on `err` (stdout may carry the export), the process exit status.
int RunExportCommand(const TransferCommandOptions& options, std::ostream& out, std::ostream& err);
int RunImportCommand(const TransferCommandOptions& options, std::ostream& err);

}  // namespace engram
