// V4 memories and the mem0-compatible API: extraction, event workers, search and metadata limits.
#include "config/settings/settings.h"

namespace engram {

std::vector<OptionSpec> MemorySettings() {
  // clang-format off
  return {
      {.name = "extractor", .field = &ServeOptions::extractor, .help = "memory extraction: rules (built-in, offline) or llm (an OpenAI-compatible chat-completions endpoint)", .choices = {"rules", "llm"}},
      {.name = "event-workers", .field = &ServeOptions::event_workers, .help = "threads running memory events (extraction, reconciliation)", .tier = OptionTier::kAdvanced, .min = 1, .max = 64},
      {.name = "max-top-k", .field = &ServeOptions::max_top_k, .help = "largest top_k of memory and knowledge-base searches (the Leaderboard's is 100)", .min = 1, .max = 10000},
      {.name = "max-metadata-bytes", .field = &ServeOptions::max_metadata_bytes, .help = "largest memory metadata, as JSON (400 beyond)", .tier = OptionTier::kAdvanced, .min = 2},
      {.name = "mem0-workspace", .field = &ServeOptions::mem0_workspace, .help = "workspace of mem0-API requests that name no project_id and whose key is not limited to one workspace"},
  };
  // clang-format on
}

}  // namespace engram
