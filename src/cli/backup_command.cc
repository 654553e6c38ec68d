#include "cli/backup_command.h"

#include <fmt/format.h>

#include "cli/serve_flags.h"
#include "common/build_info.h"
#include "store/migrations.h"
#include "store/sqlite_backup.h"

namespace engram {
namespace {

std::string Summary(const BackupManifest& m) {
  uint64_t bytes = 0, journal_files = 0;
  for (const BackupFile& f : m.files) {
    bytes += f.bytes;
    if (f.path != "engram.db") ++journal_files;
  }
  int64_t rows = 0;
  for (const auto& [table, n] : m.rows) rows += n;
  return fmt::format("schema v{}, {} rows in {} tables, {} intake journal files, {} bytes",
                     m.schema_version, rows, m.rows.size(), journal_files, bytes);
}

}  // namespace

std::pair<CLI::App*, CLI::App*> AddBackupCommands(CLI::App& app, BackupCommandOptions& backup,
                                                  BackupCommandOptions& restore) {
  CLI::App* backup_cmd = app.add_subcommand(
      "backup", "copy the SQLite data directory, consistent at one point in time, while it serves");
  backup_cmd->add_option("dest", backup.path, "new directory for the backup (missing or empty)")
      ->required();
  AddServeTextOption(*backup_cmd, "data-dir", backup.data_dir);
  CLI::App* restore_cmd = app.add_subcommand(
      "restore", "check a backup and copy it into an empty data directory (server stopped)");
  restore_cmd->add_option("source", restore.path, "a directory written by engram backup")
      ->required();
  AddServeTextOption(*restore_cmd, "data-dir", restore.data_dir);
  return {backup_cmd, restore_cmd};
}

int RunBackupCommand(const BackupCommandOptions& options, std::ostream& out, std::ostream& err) {
  auto manifest = BackupSqliteDataDir({.data_dir = options.data_dir,
                                       .dest = options.path,
                                       .engram_version = std::string(GetBuildInfo().version)});
  if (!manifest.ok()) {
    err << "engram backup: " << manifest.status().message() << "\n";
    return 1;
  }
  out << "backed up " << options.data_dir << " into " << options.path << ": " << Summary(*manifest)
      << "\n";
  return 0;
}

int RunRestoreCommand(const BackupCommandOptions& options, std::ostream& out, std::ostream& err) {
  auto manifest = RestoreSqliteDataDir({.source = options.path,
                                        .data_dir = options.data_dir,
                                        .max_schema_version = SqliteMigrations().back().version});
  if (!manifest.ok()) {
    err << "engram restore: " << manifest.status().message() << "\n";
    return 1;
  }
  out << "restored " << options.path << " (taken " << manifest->created_at << " by Engram "
      << manifest->engram_version << ") into " << options.data_dir << ": " << Summary(*manifest)
      << "\n";
  return 0;
}

}  // namespace engram
