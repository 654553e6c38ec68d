// mem0 response shapes: memories with null for unset ids, pages with neighbour links, events'
// results, errors with a detail.
#include "api/mem0/mem0_render.h"

#include <gtest/gtest.h>

namespace engram {
namespace {

using json = nlohmann::json;

TEST(Mem0RenderTest, MemoryShape) {
  AgentMemory m;
  m.id = "m-1";
  m.text = "likes tea";
  m.user_id = "u";
  m.app_id = "shop";
  m.metadata_json = R"({"k":1})";
  m.categories = {"food"};
  m.created_at_us = m.updated_at_us = 1700000000LL * 1000000;
  json j = RenderMem0Memory(m);
  EXPECT_EQ(j["memory"], "likes tea");
  EXPECT_EQ(j["user_id"], "u");
  EXPECT_TRUE(j["agent_id"].is_null());
  EXPECT_EQ(j["app_id"], "shop");
  EXPECT_EQ(j["metadata"]["k"], 1);
  EXPECT_EQ(j["categories"], json::array({"food"}));
  EXPECT_TRUE(j["expiration_date"].is_null());
  m.expires_at_us = (19000LL + 1) * 86400 * 1000000;  // the first microsecond after day 19000
  EXPECT_EQ(RenderMem0Memory(m)["expiration_date"], "2022-01-08");
  json projected = ProjectMem0Fields(j, {"memory"});
  EXPECT_EQ(projected.size(), 2u);  // id and memory
  EXPECT_EQ(projected["id"], "m-1");
}

TEST(Mem0RenderTest, PagesLinkTheirNeighbours) {
  json p = Mem0Page(json::array({1, 2}), 5, 2, 2, "http://h:1/v3/memories/");
  EXPECT_EQ(p["count"], 5);
  EXPECT_EQ(p["next"], "http://h:1/v3/memories/?page=3&page_size=2");
  EXPECT_EQ(p["previous"], "http://h:1/v3/memories/?page=1&page_size=2");
  json last = Mem0Page(json::array({5}), 5, 3, 2, "u/");
  EXPECT_TRUE(last["next"].is_null());
  json first = Mem0Page(json::array(), 0, 1, 10, "u/");
  EXPECT_TRUE(first["previous"].is_null());
  EXPECT_TRUE(first["next"].is_null());
}

TEST(Mem0RenderTest, RequestUrlKeepsOnlyHostCharacters) {
  HttpRequest r;
  r.path = "/v3/memories";
  r.headers = {{"host", "engram.local:8080"}, {"x-forwarded-proto", "https"}};
  EXPECT_EQ(Mem0RequestUrl(r), "https://engram.local:8080/v3/memories/");
  r.headers = {{"host", "evil.com/\"><script>"}};
  EXPECT_EQ(Mem0RequestUrl(r), "http://localhost/v3/memories/");
}

TEST(Mem0RenderTest, EventResultsAndErrors) {
  MemoryEventRecord e;
  e.id = "me-1";
  e.status = JobStatus::kSucceeded;
  e.result_json =
      R"({"results":["m-1"],"events":[{"memory_id":"m-1","event":"ADD","memory":"likes tea","previous_memory":null}]})";
  MemoryAddRequest add;
  add.workspace = "w";
  add.user_id = "alice";
  add.app_id = "shop";
  e.workspace = "w";
  e.request_json = EncodeAddRequest(add);
  json r = Mem0EventResults(e);
  ASSERT_EQ(r.size(), 1u);
  EXPECT_EQ(r[0]["user_id"], "alice");
  EXPECT_EQ(r[0]["app_id"], "shop");
  EXPECT_TRUE(r[0]["agent_id"].is_null());
  EXPECT_EQ(r[0]["id"], "m-1");
  EXPECT_EQ(r[0]["event"], "ADD");
  EXPECT_EQ(r[0]["data"]["memory"], "likes tea");
  json rendered = RenderMem0Event(e);
  EXPECT_EQ(rendered["event_type"], "ADD");
  EXPECT_TRUE(rendered["error_message"].is_null());

  HttpResponse err = Mem0ErrorResponse(Status::InvalidParameter("top_k must be 1..1000"), "rid", 0);
  EXPECT_EQ(err.status, 400);
  json body = json::parse(err.body);
  EXPECT_EQ(body["detail"], "top_k must be 1..1000");
  EXPECT_EQ(body["request_id"], "rid");
  EXPECT_EQ(Mem0ErrorResponse(Status(StatusCode::kNotImplemented, "webhooks"), "r", 0).status, 501);
}

}  // namespace
}  // namespace engram
