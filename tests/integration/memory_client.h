// Helpers for the integration tests of the V4 memory API: the path prefix of a workspace, adds
// that wait for their event, and searches. Assertions are made with gtest's non-fatal macros, so
// a failed helper reports and the test goes on with an empty answer.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "http_client.h"

namespace engram::testing {

// "/v4/openapi/workspaces/<workspace>/memory/agentic-memory"
std::string MemoryPrefix(std::string_view workspace = "default");

// Polls an event until it is SUCCEEDED or FAILED (or 20 s pass); returns its last body.
// `headers` go with every request (an API key).
nlohmann::json WaitMemoryEvent(const HttpClient& client, const std::string& event_id,
                               std::string_view workspace = "default", const Headers& headers = {});

// Adds (expecting the documented PENDING answer) and waits for the event; returns the event.
nlohmann::json AddMemoriesAndWait(const HttpClient& client, const nlohmann::json& body,
                                  std::string_view workspace = "default",
                                  const Headers& headers = {});

// memories/search's `results` (expecting 200); an empty array otherwise.
nlohmann::json SearchMemories(const HttpClient& client, const nlohmann::json& body,
                              std::string_view workspace = "default");

// Whether a search of `user`'s memories (default workspace) for `word` returns a memory that
// holds it.
bool FindsMemory(const HttpClient& client, const std::string& user, const std::string& word);

}  // namespace engram::testing
