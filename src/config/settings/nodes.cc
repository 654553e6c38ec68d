// Several nodes on one PostgreSQL store: connections, the node's name, job leases.
#include "config/settings/settings.h"

namespace engram {

std::vector<OptionSpec> SeveralNodesSettings() {
  // clang-format off
  return {
      {.name = "store-connections", .field = &ServeOptions::store_connections, .help = "PostgreSQL connections of this node", .tier = OptionTier::kAdvanced, .min = 1, .max = 256},
      {.name = "node-id", .field = &ServeOptions::node_id, .help = "this node's name in job leases (empty: a random one)", .tier = OptionTier::kAdvanced},
      {.name = "job-lease-ms", .field = &ServeOptions::job_lease_ms, .help = "another node takes over the jobs of a node silent for this long", .tier = OptionTier::kAdvanced, .min = 1000, .max = 3600000},
      {.name = "job-poll-ms", .field = &ServeOptions::job_poll_ms, .help = "how often a node looks for such jobs (at most --job-lease-ms)", .tier = OptionTier::kAdvanced, .min = 100, .max = 3600000},
  };
  // clang-format on
}

}  // namespace engram
