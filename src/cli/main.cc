// engram: the Engram memory server and its tools.
#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cstdlib>
#include <iostream>
#include <sstream>

#include "api/openapi_markdown.h"
#include "cli/backup_command.h"
#include "cli/serve_command.h"
#include "cli/serve_flags.h"
#include "cli/transfer_command.h"
#include "common/build_info.h"
#include "config/option_table.h"
#include "config/serve_options.h"
#include "embed/embed_command.h"
#include "mcp/stdio_command.h"
#include "modules/embedding_module.h"
#include "modules/openapi_fragments.h"

int main(int argc, char** argv) {
  // Logs go to stderr; stdout carries only the "listening on" line and command output.
  spdlog::set_default_logger(spdlog::stderr_color_mt("engram"));

  CLI::App app{"Engram: a self-hosted memory server for AI agents"};
  app.require_subcommand(1);

  engram::ServeOptions serve;
  auto* serve_cmd = app.add_subcommand("serve", "run the HTTP server");
  // CLI11 reads config files only at the top level; `serve --config FILE` is rewritten to
  // `--config FILE serve` below. The file holds a [serve] section with the long flag names.
  app.set_config("--config", "", "read `serve` options from a TOML or INI file ([serve] section)");
  engram::AddServeOptions(*serve_cmd, serve);

  app.add_subcommand("config-doc",
                     "print docs/configuration.md: every serve setting, generated from its table")
      ->callback([] { std::cout << engram::ConfigurationMarkdown(); });

  // The generated OpenAPI document, or the page rendered from it: printed, or the problems and
  // exit 1. The modules' start-up lines are not news here.
  const auto print_generated = [](bool endpoints_page) {
    spdlog::set_level(spdlog::level::warn);
    auto text = engram::GenerateServerOpenApi();
    if (text.ok() && endpoints_page) text = engram::EndpointsMarkdown(*text);
    if (!text.ok()) {
      std::cerr << text.status().message() << "\n";
      std::exit(1);
    }
    std::cout << *text;
  };
  app.add_subcommand("openapi",
                     "print src/api/openapi.json: the route table with each API's fragments")
      ->callback([&] { print_generated(false); });
  app.add_subcommand("endpoints-doc",
                     "print docs/api/endpoints.md: every endpoint, from the generated OpenAPI "
                     "document")
      ->callback([&] { print_generated(true); });

  std::vector<std::string> embed_texts;
  bool embed_similarity = false;
  std::string embed_model_dir;
  auto* embed_cmd = app.add_subcommand("embed", "print the built-in model's vector for each text");
  embed_cmd->add_option("texts", embed_texts, "texts to embed")->required();
  embed_cmd->add_flag("--similarity", embed_similarity, "print the cosine similarity of two texts");
  embed_cmd->add_option("--model-dir", embed_model_dir, "built-in model directory")
      ->envname("ENGRAM_MODEL_DIR");

  // MCP over stdin/stdout for hosts that launch a command, relayed to a running server
  // (src/mcp/http_relay.h says why; docs/mcp.md).
  engram::mcp::HttpRelayOptions mcp_relay;
  auto* mcp_cmd = app.add_subcommand(
      "mcp", "speak MCP on stdin/stdout, relaying every message to a running engram serve");
  mcp_cmd
      ->add_option("--url", mcp_relay.url, "the server (http://HOST:PORT) or its MCP endpoint URL")
      ->envname("ENGRAM_URL")
      ->capture_default_str();
  mcp_cmd->add_option("--api-key", mcp_relay.api_key, "API key sent as Authorization: Bearer")
      ->envname("ENGRAM_API_KEY");
  mcp_cmd->add_option("--workspace", mcp_relay.workspace, "workspace (default: default)")
      ->envname("ENGRAM_WORKSPACE");

  // Backup and restore of the SQLite data directory (store/sqlite_backup.h; docs/operations.md).
  engram::BackupCommandOptions backup, restore;
  const auto [backup_cmd, restore_cmd] = engram::AddBackupCommands(app, backup, restore);
  // Export and import as JSON Lines, on either store (transfer/; docs/export-format.md).
  engram::TransferCommandOptions export_options, import_options;
  const auto [export_cmd, import_cmd] =
      engram::AddTransferCommands(app, export_options, import_options);

  app.add_subcommand("version", "print the version and the source revision")->callback([] {
    const engram::BuildInfo info = engram::GetBuildInfo();
    std::cout << "engram " << info.version << " (" << info.revision << ", " << info.build_type
              << ", " << info.compiler << ")" << std::endl;
  });

  std::vector<std::string> args(argv + 1, argv + argc);
  for (size_t i = 1; i < args.size(); ++i) {
    if (args[0] != "serve") break;
    if (args[i] == "--config" && i + 1 < args.size()) {
      std::string file = args[i + 1];
      args.erase(args.begin() + static_cast<long>(i), args.begin() + static_cast<long>(i) + 2);
      args.insert(args.begin(), {"--config", file});
      break;
    }
    if (args[i].rfind("--config=", 0) == 0) {
      std::string opt = args[i];
      args.erase(args.begin() + static_cast<long>(i));
      args.insert(args.begin(), opt);
      break;
    }
  }
  std::reverse(args.begin(), args.end());  // CLI11 takes a reversed vector
  try {
    app.parse(args);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  }

  if (backup_cmd->parsed()) return engram::RunBackupCommand(backup, std::cout, std::cerr);
  if (restore_cmd->parsed()) return engram::RunRestoreCommand(restore, std::cout, std::cerr);
  if (export_cmd->parsed()) return engram::RunExportCommand(export_options, std::cout, std::cerr);
  if (import_cmd->parsed()) return engram::RunImportCommand(import_options, std::cerr);
  if (mcp_cmd->parsed()) return engram::mcp::RunMcpStdio(std::move(mcp_relay));
  if (embed_cmd->parsed()) {
    return engram::RunEmbedCommand(
        embed_model_dir.empty() ? engram::DefaultModelDir() : embed_model_dir, embed_texts,
        embed_similarity, std::cout, std::cerr);
  }
  if (serve_cmd->parsed()) {
    engram::ApplyListsFromEnvironment(serve);
    spdlog::set_level(spdlog::level::from_str(serve.log_level));
    return engram::RunServe(std::move(serve));
  }
  return 0;
}
