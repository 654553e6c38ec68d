#include "memory_client.h"

#include <gtest/gtest.h>

#include <chrono>
#include <thread>

#include "test_util.h"

namespace engram::testing {

using nlohmann::json;
using namespace std::chrono_literals;

std::string MemoryPrefix(std::string_view workspace) {
  return "/v4/openapi/workspaces/" + std::string(workspace) + "/memory/agentic-memory";
}

json WaitMemoryEvent(const HttpClient& client, const std::string& event_id,
                     std::string_view workspace, const Headers& headers) {
  json last;
  const auto deadline = std::chrono::steady_clock::now() + 20s;
  while (std::chrono::steady_clock::now() < deadline) {
    HttpResponse r = client.Get(MemoryPrefix(workspace) + "/events/" + event_id, headers);
    if (r.status != 200) {
      ADD_FAILURE() << "event poll: " << r.Describe();
      return json();
    }
    last = r.Json();
    const std::string status = last.value("status", "");
    if (status == "SUCCEEDED" || status == "FAILED") return last;
    std::this_thread::sleep_for(20ms);
  }
  ADD_FAILURE() << "event " << event_id << " did not finish: " << last.dump();
  return last;
}

json AddMemoriesAndWait(const HttpClient& client, const json& body, std::string_view workspace,
                        const Headers& headers) {
  HttpResponse r = client.Post(MemoryPrefix(workspace) + "/memories/add", body, headers);
  EXPECT_EQ(r.status, 200) << r.Describe();
  // Answered later (once durable), with its request id all the same.
  EXPECT_TRUE(IsJsonResponse(r));
  json j = r.Json();
  EXPECT_EQ(j.value("status", ""), "PENDING") << r.body;
  EXPECT_EQ(j.value("message", ""),
            "Memory creation accepted; poll the event endpoint for status.");
  const std::string id = j.value("event_id", "");
  EXPECT_EQ(id.rfind("me-", 0), 0u) << r.body;
  if (id.empty()) return json();
  return WaitMemoryEvent(client, id, workspace, headers);
}

json SearchMemories(const HttpClient& client, const json& body, std::string_view workspace) {
  HttpResponse r = client.Post(MemoryPrefix(workspace) + "/memories/search", body);
  EXPECT_EQ(r.status, 200) << r.Describe();
  json j = r.Json();
  if (!j.is_object() || !j.contains("results")) return json::array();
  return j["results"];
}

bool FindsMemory(const HttpClient& client, const std::string& user, const std::string& word) {
  for (const json& m : SearchMemories(client, {{"query", word}, {"user_id", user}})) {
    if (m.value("memory", "").find(word) != std::string::npos) return true;
  }
  return false;
}

}  // namespace engram::testing
