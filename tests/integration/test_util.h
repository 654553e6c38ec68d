// Shared helpers for the integration tests: a lazily started per-suite server, request builders
// for the Leaderboard API and assertions on the response shapes of docs/api/README.md.
#pragma once

#include <gtest/gtest.h>

#include <chrono>
#include <cstdint>
#include <initializer_list>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <utility>
#include <vector>

#include "http_client.h"
#include "server_process.h"

namespace engram::testing {

inline constexpr std::string_view kAddPath = "/leaderboard/add";
inline constexpr std::string_view kSearchPath = "/leaderboard/search";

// Skips the current test when the engram binary is missing.
#define ENGRAM_REQUIRE_BINARY()                                  \
  do {                                                           \
    if (!::engram::testing::EngramBinary()) {                    \
      GTEST_SKIP() << ::engram::testing::MissingBinaryMessage(); \
    }                                                            \
  } while (0)

// A fixture whose server is started by the first test of the suite that needs it (so a missing
// binary skips instead of failing) and stopped after the suite. Tests keep apart by using unique
// user ids. Subclasses may override Options() for flags.
class SharedServerTest : public ::testing::Test {
 protected:
  static void TearDownTestSuite();
  void SetUp() override;

  // Flags for the suite's server; called once per suite.
  virtual ServerOptions Options() const { return {}; }

  ServerProcess& server() { return *server_; }
  HttpClient& client() { return *client_; }

 private:
  static std::unique_ptr<ServerProcess> server_;
  static std::unique_ptr<HttpClient> client_;
  static std::string start_error_;  // a failed start is not retried by every test of the suite
};

// One run of the engram binary with `args` (a shell command line), waited for.
struct CommandResult {
  int exit_code = -1;
  std::string output;  // stdout and stderr
};
CommandResult RunEngram(const std::string& args);

// A directory under /tmp, removed with everything in it when destroyed; path is empty when it
// could not be made.
struct TempDir {
  TempDir();
  ~TempDir();
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  std::string path;
};

// "prefix:<uuid>", unique per call.
std::string UniqueId(std::string_view prefix);
// "<prefix>-<uuid>": a fresh workspace name (at most 64 characters for a prefix of up to 27).
std::string UniqueWorkspace(std::string_view prefix);
// A random lower-case word no dictionary or stemmer knows (consonants only), e.g. "qzkxbdfrtw".
std::string UniqueWord();

// {"role", "content", "timestamp"?}
nlohmann::json Message(nlohmann::json content, std::optional<int64_t> timestamp_ms = std::nullopt,
                       std::string_view role = "user");
nlohmann::json AddBody(std::string_view request_id, std::string_view user_id,
                       std::string_view session_id, nlohmann::json messages);
nlohmann::json SearchBody(std::string_view user_id, nlohmann::json query, int top_k = 10);

// POSTs a search; on a non-200 or malformed answer reports a failure and returns an empty array.
nlohmann::json SearchData(const HttpClient& client, std::string_view user_id,
                          std::string_view query, int top_k = 100);
// The text of a search item's `content`: the string, or the text parts of a ContentPart array
// joined by "\n".
std::string ContentText(const nlohmann::json& content);
// How many items of a search `data` array have `needle` in their text.
int CountContaining(const nlohmann::json& data, std::string_view needle);
// How many times `needle` appears in the text of a search `data` array's items (a result that
// shows several turns counts each).
int CountOccurrences(const nlohmann::json& data, std::string_view needle);

// Every response: X-Request-Id header present, Content-Type application/json, body is JSON.
::testing::AssertionResult IsJsonResponse(const HttpResponse& resp);
// Success of a leaderboard add: 200 and exactly {"success": true, request_id, user_id, session_id}
// echoing `body`.
::testing::AssertionResult IsAddSuccess(const HttpResponse& resp, const nlohmann::json& body);
// The error envelope {"request_id","latency","code","http_code","message"} with the given status
// and code; when `field` is non-empty the message must mention it (case-insensitive).
::testing::AssertionResult IsError(const HttpResponse& resp, int status, std::string_view code,
                                   std::string_view field = {});

// Health as /healthz and the default workspace's V3 health route see it: success only when both
// answer healthy (200, "healthy") or both unhealthy (503, "unhealthy"), as `healthy` asks.
::testing::AssertionResult HealthIs(const HttpClient& client, bool healthy);

// Calls `fn` every 50 ms until it returns true or `limit` has passed; returns its last answer.
template <typename Fn>
bool Within(std::chrono::milliseconds limit, Fn&& fn) {
  const auto deadline = std::chrono::steady_clock::now() + limit;
  while (std::chrono::steady_clock::now() < deadline) {
    if (fn()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  return static_cast<bool>(fn());
}

// JSON types of response fields. The contract's examples show unset ids and messages as "" (e.g.
// "agent_id": ""), so a field the contract shows as a string must never be null.
enum class JsonType { kString, kNumber, kInteger, kBoolean, kArray, kObject };
// Every named field of `obj` is present with its type; the failure names the first that is not.
::testing::AssertionResult HasFieldTypes(
    const nlohmann::json& obj, std::initializer_list<std::pair<std::string_view, JsonType>> fields);

// A valid 1×1 RGBA PNG (70 bytes) and its base64.
inline constexpr char kTinyPngBase64[] =
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg"
    "==";
std::string TinyPngBytes();
// A ContentPart {"type": "image_url", "image_url": {"url": "data:image/png;base64,…"}} of `bytes`.
nlohmann::json ImagePart(const std::string& bytes);

}  // namespace engram::testing
