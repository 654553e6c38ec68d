#include "cli/transfer_command.h"

#include <fmt/format.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <memory>

#include "cli/serve_flags.h"
#include "common/build_info.h"
#include "common/posix_file.h"
#include "common/time_util.h"
#include "store/pg_store.h"
#include "store/sqlite_data_dir.h"
#include "transfer/importer.h"

namespace engram {
namespace {

std::string Summary(const transfer::TransferCounts& n) {
  return fmt::format(
      "{} Leaderboard messages, {} images, {} agent memories, {} skills, {} knowledge-base "
      "documents",
      n.messages, n.images, n.memories, n.skills, n.kb_documents);
}

// The store `serve` would open with these flags: PostgreSQL at the URL, else the SQLite data
// directory (for an export, read beside a server that may be running; for an import, locked
// against one).
Result<std::unique_ptr<Store>> OpenStoreFor(const TransferCommandOptions& o, bool writing) {
  if (!o.store_url.empty()) {
    auto pg = PgStore::Open({.url = o.store_url, .connections = 2});
    if (!pg.ok()) return pg.status();
    return std::unique_ptr<Store>(std::move(pg).value());
  }
  if (!std::filesystem::exists(std::filesystem::path(o.data_dir) / sqlite_data_dir::kDatabase)) {
    if (!writing) {
      return Status::NotFound(fmt::format("{} holds no Engram database", o.data_dir));
    }
    std::error_code ec;
    std::filesystem::create_directories(o.data_dir, ec);
    if (ec) return Status::Internal(fmt::format("cannot create {}: {}", o.data_dir, ec.message()));
  }
  SqliteStoreOptions options = writing ? sqlite_data_dir::WritableOptions(o.data_dir)
                                       : sqlite_data_dir::ReadOnlyOptions(o.data_dir);
  // The intake journal's unreleased events stay where they are, for the server's next start.
  options.intake_journal_dir.clear();
  auto sqlite = SqliteStore::Open(std::move(options));
  if (!sqlite.ok()) return sqlite.status();
  return std::unique_ptr<Store>(std::move(sqlite).value());
}

}  // namespace

std::pair<CLI::App*, CLI::App*> AddTransferCommands(CLI::App& app,
                                                    TransferCommandOptions& export_options,
                                                    TransferCommandOptions& import_options) {
  CLI::App* export_cmd = app.add_subcommand(
      "export", "write what the store holds as JSON Lines (docs/export-format.md)");
  export_cmd->add_option("file", export_options.path, "file to write; - for standard output")
      ->required();
  export_cmd->add_option("--workspace", export_options.exporting.workspace, "only this workspace");
  export_cmd->add_option("--user", export_options.exporting.user_id,
                         "only this user's messages, memories and skills (no knowledge bases)");
  export_cmd->add_flag("!--no-vectors", export_options.exporting.vectors,
                       "leave vectors out (smaller; the importing server re-embeds)");
  AddServeTextOption(*export_cmd, "data-dir", export_options.data_dir);
  AddServeTextOption(*export_cmd, "store-url", export_options.store_url);

  CLI::App* import_cmd = app.add_subcommand(
      "import", "write an export into the store, skipping what it already has (idempotent)");
  import_cmd->add_option("file", import_options.path, "a file written by engram export")
      ->required();
  import_cmd->add_flag("--check", import_options.check_only,
                       "read and check every line, write nothing");
  AddServeTextOption(*import_cmd, "data-dir", import_options.data_dir);
  AddServeTextOption(*import_cmd, "store-url", import_options.store_url);
  return {export_cmd, import_cmd};
}

int RunExportCommand(const TransferCommandOptions& options, std::ostream& out, std::ostream& err) {
  auto store = OpenStoreFor(options, /*writing=*/false);
  if (!store.ok()) {
    err << "engram export: " << store.status().message() << "\n";
    return 1;
  }
  transfer::ExportOptions exporting = options.exporting;
  exporting.engram_version = std::string(GetBuildInfo().version);
  exporting.created_at = FormatIsoMicros(NowMicros());
  Result<transfer::TransferCounts> counts = transfer::TransferCounts{};
  if (options.path == "-") {
    counts = transfer::ExportStore(**store, exporting, out);
  } else {
    // Written beside the destination and renamed once complete: a failed export leaves no file
    // that looks whole.
    const std::string partial = options.path + ".partial";
    {
      std::ofstream file(partial, std::ios::binary | std::ios::trunc);
      if (!file) {
        err << "engram export: cannot create " << partial << "\n";
        return 1;
      }
      counts = transfer::ExportStore(**store, exporting, file);
      file.close();
      if (counts.ok() && !file) counts = Status::Internal("writing the export failed");
    }
    if (Status st = counts.ok() ? SyncPath(partial) : Status::Ok(); !st.ok()) counts = st;
    if (counts.ok() && std::rename(partial.c_str(), options.path.c_str()) != 0) {
      counts = Status::Internal(fmt::format("cannot rename {} to {}", partial, options.path));
    }
    const std::string dir = std::filesystem::path(options.path).parent_path().string();
    if (Status st = counts.ok() ? SyncPath(dir.empty() ? "." : dir) : Status::Ok(); !st.ok()) {
      counts = st;
    }
    if (!counts.ok()) std::remove(partial.c_str());
  }
  if (!counts.ok()) {
    err << "engram export: " << counts.status().message() << "\n";
    return 1;
  }
  err << "exported " << Summary(*counts) << "\n";
  return 0;
}

int RunImportCommand(const TransferCommandOptions& options, std::ostream& err) {
  // The whole file first: a bad file leaves the store (and a data directory not made yet) alone.
  auto read = transfer::CheckFile(options.path);
  if (!read.ok()) {
    err << "engram import: " << read.status().message() << "\n";
    return 1;
  }
  if (options.check_only) {
    err << "checked " << options.path << ": " << Summary(*read) << "\n";
    return 0;
  }
  auto store = OpenStoreFor(options, /*writing=*/true);
  if (!store.ok()) {
    err << "engram import: " << store.status().message() << "\n";
    return 1;
  }
  auto result = transfer::ImportCheckedFile(**store, options.path, *read);
  if (!result.ok()) {
    err << "engram import: " << result.status().message() << "\n";
    return 1;
  }
  err << "imported " << Summary(result->written) << "; already there: " << Summary(result->skipped)
      << "\n";
  return 0;
}

}  // namespace engram
