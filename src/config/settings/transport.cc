// The HTTP transport: threads, request size limits, timeouts, connection limits.
#include "config/settings/settings.h"

namespace engram {

std::vector<OptionSpec> TransportSettings() {
  // clang-format off
  return {
      {.name = "io-threads", .field = &ServeOptions::io_threads, .help = "network threads, which also run searches (0: one per core, at least 2)", .tier = OptionTier::kAdvanced, .min = 0, .max = 256},
      {.name = "worker-threads", .field = &ServeOptions::worker_threads, .help = "request handler threads (handlers block on fsync)", .tier = OptionTier::kAdvanced, .min = 1, .max = 1024},
      {.name = "compute-slots", .field = &ServeOptions::compute_slots, .help = "searches run at once on the network threads when store and model are local (0: one per core)", .tier = OptionTier::kAdvanced, .min = 0, .max = 1024},
      {.name = "max-body-bytes", .field = &ServeOptions::max_body_bytes, .help = "request body limit (413 beyond)", .min = 1024},
      {.name = "max-header-bytes", .field = &ServeOptions::max_header_bytes, .help = "request header limit (413 beyond)", .tier = OptionTier::kAdvanced, .min = 1024},
      {.name = "header-timeout-ms", .field = &ServeOptions::header_timeout_ms, .help = "time allowed to send the request header", .tier = OptionTier::kAdvanced, .min = 1},
      {.name = "body-timeout-ms", .field = &ServeOptions::body_timeout_ms, .help = "time allowed to send the request body", .tier = OptionTier::kAdvanced, .min = 1},
      {.name = "idle-timeout-ms", .field = &ServeOptions::idle_timeout_ms, .help = "keep-alive wait for the next request", .tier = OptionTier::kAdvanced, .min = 1},
      {.name = "max-connections", .field = &ServeOptions::max_connections, .help = "open connections; at the limit an idle one is closed for a new one, else the new one gets 503", .min = 1, .max = 1000000},
      {.name = "max-connections-per-client", .field = &ServeOptions::max_connections_per_client, .help = "open connections from one client address (0: no limit)", .min = 0, .max = 1000000},
      {.name = "pressure-idle-timeout-ms", .field = &ServeOptions::pressure_idle_timeout_ms, .help = "wait for a request's first byte once over half of --max-connections are open", .tier = OptionTier::kAdvanced, .min = 1},
      {.name = "max-inflight-body-bytes", .field = &ServeOptions::max_inflight_body_bytes, .help = "request body bytes held at once over all connections (503 with Retry-After beyond)", .min = 1024},
      {.name = "shutdown-grace-ms", .field = &ServeOptions::shutdown_grace_ms, .help = "on SIGTERM, time in-flight requests get to finish", .min = 0},
  };
  // clang-format on
}

}  // namespace engram
