// The Leaderboard API (/leaderboard/add, /leaderboard/search, /leaderboard/health,
// DELETE /leaderboard/users/{user_id}): JSON <-> LeaderboardService.
// Parsing validates every field with a message naming it and refuses only what is genuinely
// invalid: benchmark data is sent as published, so empty messages and any casing of the roles are
// accepted (docs/leaderboard.md has the table). Rendering shows each memory's date so an
// answering model can place it in time.
// Thread-safety: stateless functions; the registered handlers are safe to run concurrently.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "api/content_parts.h"
#include "api/router.h"
#include "core/leaderboard_service.h"

namespace engram {

struct LeaderboardApiLimits {
  size_t max_id_bytes = 256;  // user_id, session_id
  size_t max_request_id_bytes = 512;
  size_t max_messages = 10000;  // a whole session may come as one chunk
  size_t max_query_bytes = 64 << 10;
  size_t max_options = 64;
  size_t max_option_bytes = 4 << 10;
  int max_top_k = 100;
  ContentLimits content;
};

Result<LeaderboardAddRequest> ParseLeaderboardAdd(std::string_view body,
                                                  const LeaderboardApiLimits& limits);
Result<LeaderboardSearchRequest> ParseLeaderboardSearch(std::string_view body,
                                                        const LeaderboardApiLimits& limits);

// The text shown for a memory: "[2023-05-08 (Mon) 13:56 UTC] <original text>".
std::string DatedText(int64_t time_us, const std::string& text);

// The line before an excerpt of a long message, so the answer model knows where it is from:
// "lines 120-178 of 612 of a 21 KB user message that begins \"File: stdio.h\":\n" (without the
// title when the excerpt starts at the message's first line, which then shows it).
std::string ExcerptHeader(const LeaderboardExcerpt& excerpt);

// The text of a result that shows a run of turns (RetrievalOptions::excerpts): a turn a line,
// each begun by its date when it differs from the turn before ("[2023-05-08 (Mon) 13:56 UTC] ")
// and by its role unless its text names its speaker (rule_extract::NamesItsSpeaker; "user: ").
std::string TurnsText(const std::vector<LeaderboardTurn>& turns);

// What the health route reports about the server.
struct LeaderboardServerInfo {
  std::string version;  // as `engram version` prints it
};

void RegisterLeaderboardRoutes(Router& router, LeaderboardService* service,
                               LeaderboardApiLimits limits, LeaderboardServerInfo info = {});

}  // namespace engram
