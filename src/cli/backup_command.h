// `engram backup` and `engram restore`: the command line of store/sqlite_backup.h.
// Thread-safety: run from main, one at a time.
#pragma once

#include <CLI/CLI.hpp>
#include <ostream>
#include <string>

namespace engram {

struct BackupCommandOptions {
  std::string data_dir;  // the server's --data-dir
  std::string path;      // backup: the destination; restore: the source
};

// Adds the two subcommands to `app`, bound to `backup` and `restore`; returns them so that main
// can tell which one was parsed.
std::pair<CLI::App*, CLI::App*> AddBackupCommands(CLI::App& app, BackupCommandOptions& backup,
                                                  BackupCommandOptions& restore);

// Run the command: a summary on `out`, an error on `err`; the process exit status.
int RunBackupCommand(const BackupCommandOptions& options, std::ostream& out, std::ostream& err);
int RunRestoreCommand(const BackupCommandOptions& options, std::ostream& out, std::ostream& err);

}  // namespace engram
