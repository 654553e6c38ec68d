// The process: where it listens, where its data and keys are, which store it uses, how much it
// logs.
#include "config/settings/settings.h"

namespace engram {

std::vector<OptionSpec> ServerSettings() {
  // clang-format off
  return {
      {.name = "listen", .field = &ServeOptions::listen, .help = "HOST:PORT to listen on (port 0: any free port; the server prints `engram listening on HOST:PORT`)"},
      {.name = "data-dir", .field = &ServeOptions::data_dir, .help = "directory of the SQLite database and the intake journal"},
      {.name = "api-key", .field = &ServeOptions::api_keys, .help = "API key, repeatable: KEY (every workspace) or KEY:ws1:ws2 (only those); none: development mode, loopback only", .env = "ENGRAM_API_KEYS"},
      {.name = "allowed-origin", .field = &ServeOptions::allowed_origins, .help = "origin a web page may call Engram from (scheme://host[:port]), repeatable; CORS answers only these; none: only pages this server serves on a loopback name", .env = "ENGRAM_ALLOWED_ORIGINS"},
      {.name = "allowed-host", .field = &ServeOptions::allowed_hosts, .help = "Host name a development-mode server answers besides loopback names, repeatable (a DNS-rebinding defence)", .env = "ENGRAM_ALLOWED_HOSTS"},
      {.name = "store-url", .field = &ServeOptions::store_url, .help = "PostgreSQL URL (postgresql://user:pw@host:port/db) shared by several nodes; empty: SQLite in --data-dir"},
      {.name = "log-level", .field = &ServeOptions::log_level, .help = "log level; debug adds an access log (ids, sizes, timings, never content)", .choices = {"trace", "debug", "info", "warn", "error", "off"}},
  };
  // clang-format on
}

}  // namespace engram
