// The Leaderboard API: its workspace, image limits and data lifecycle.
#include "config/settings/settings.h"

namespace engram {

std::vector<OptionSpec> LeaderboardSettings() {
  // clang-format off
  return {
      {.name = "leaderboard-workspace", .field = &ServeOptions::leaderboard_workspace, .help = "workspace that holds Leaderboard data (for workspace-limited keys)", .tier = OptionTier::kAdvanced},
      {.name = "max-image-bytes", .field = &ServeOptions::max_image_bytes, .help = "largest decoded image (413 beyond)", .min = 1024},
      {.name = "max-request-image-bytes", .field = &ServeOptions::max_request_image_bytes, .help = "decoded image bytes per request (413 beyond)", .tier = OptionTier::kAdvanced, .min = 1024},
      {.name = "leaderboard-retention-days", .field = &ServeOptions::leaderboard_retention_days, .help = "delete Leaderboard users idle this many days (fractions allowed; 0: never)", .min = 0, .max = 36500},
      {.name = "leaderboard-results", .field = &ServeOptions::leaderboard_results, .help = "what a search result shows: the matched turn (turns) or it with the turns of its session around it (excerpts)", .choices = {"turns", "excerpts"}},
      {.name = "excerpt-turns-before", .field = &ServeOptions::excerpt_turns_before, .help = "excerpts: turns of context before a matched turn", .tier = OptionTier::kAdvanced, .min = 0, .max = 20},
      {.name = "excerpt-turns-after", .field = &ServeOptions::excerpt_turns_after, .help = "excerpts: turns of context after a matched turn", .tier = OptionTier::kAdvanced, .min = 0, .max = 20},
      {.name = "excerpt-max-bytes", .field = &ServeOptions::excerpt_max_bytes, .help = "excerpts: context stops where a result's text would exceed this (a matched turn is shown whole)", .tier = OptionTier::kAdvanced, .min = 0},
      {.name = "excerpt-lead-results", .field = &ServeOptions::excerpt_lead_results, .help = "excerpts: the first results show their matched turn alone; the turns around them follow", .tier = OptionTier::kAdvanced, .min = 0, .max = 100},
      {.name = "answer-max-bytes", .field = &ServeOptions::answer_max_bytes, .help = "excerpts: context stops where a search's results would exceed this in all", .tier = OptionTier::kAdvanced, .min = 0},
      {.name = "leaderboard-idempotency-ttl-days", .field = &ServeOptions::leaderboard_idempotency_ttl_days, .help = "keep Leaderboard request_id records this many days (longer than any retry window; 0: forever)", .min = 0, .max = 36500},
  };
  // clang-format on
}

}  // namespace engram
