#include "mcp/protocol.h"

#include <gtest/gtest.h>

#include "mcp/test_tools.h"

namespace engram::mcp {
namespace {

using json = nlohmann::json;

class ProtocolTest : public ::testing::Test {
 protected:
  ProtocolTest() : tools_(TestTools()), protocol_(&tools_, ServerInfo{.version = "1.2.3"}) {}

  static Message Request(const std::string& method, json params = json::object()) {
    return Message{MessageKind::kRequest, 1, method, std::move(params)};
  }
  json Call(const Message& m, const std::string& version = "2025-11-25") {
    auto r = protocol_.Handle(m, ToolContext{"ws1", version});
    return r ? *r : json();
  }

  ToolRegistry tools_;
  Protocol protocol_;
};

TEST_F(ProtocolTest, NegotiatesTheVersion) {
  for (const char* v : {"2025-11-25", "2025-06-18", "2025-03-26"}) {
    auto init = protocol_.Initialize(Request("initialize", {{"protocolVersion", v}}));
    EXPECT_EQ(init.protocol_version, v);
    EXPECT_EQ(init.response["result"]["protocolVersion"], v);
  }
  auto old = protocol_.Initialize(Request("initialize", {{"protocolVersion", "2024-11-05"}}));
  EXPECT_EQ(old.protocol_version, "2025-11-25");  // the client decides whether it can go on
  auto init = protocol_.Initialize(Request("initialize", {{"protocolVersion", "2025-11-25"}}));
  EXPECT_EQ(init.response["result"]["serverInfo"]["version"], "1.2.3");
  EXPECT_TRUE(init.response["result"]["capabilities"].contains("tools"));
  auto bad = protocol_.Initialize(Request("initialize", json::object()));
  EXPECT_TRUE(bad.protocol_version.empty());
  EXPECT_EQ(bad.response["error"]["code"], kInvalidParams);
  auto bad_caps = protocol_.Initialize(
      Request("initialize", {{"protocolVersion", "2025-11-25"}, {"capabilities", 3}}));
  EXPECT_EQ(bad_caps.response["error"]["code"], kInvalidParams);
}

TEST_F(ProtocolTest, ListsToolsPerRevision) {
  json now = Call(Request("tools/list"));
  ASSERT_EQ(now["result"]["tools"].size(), 2u);
  const json& echo = now["result"]["tools"][0];
  EXPECT_EQ(echo["name"], "echo");
  EXPECT_TRUE(echo.contains("outputSchema"));
  EXPECT_EQ(echo["annotations"]["readOnlyHint"], true);
  EXPECT_EQ(echo["annotations"]["destructiveHint"], false);
  json old = Call(Request("tools/list"), "2025-03-26");
  EXPECT_FALSE(old["result"]["tools"][0].contains("outputSchema"));
  EXPECT_EQ(Call(Request("tools/list", {{"cursor", "x"}}))["error"]["code"], kInvalidParams);
}

TEST_F(ProtocolTest, CallsTools) {
  json ok = Call(Request("tools/call", {{"name", "echo"}, {"arguments", {{"text", "hi"}}}}));
  EXPECT_EQ(ok["result"]["isError"], false);
  EXPECT_EQ(ok["result"]["structuredContent"]["workspace"], "ws1");
  EXPECT_EQ(ok["result"]["content"][0]["text"], "hi @ws1");
  json old = Call(Request("tools/call", {{"name", "echo"}, {"arguments", {{"text", "hi"}}}}),
                  "2025-03-26");
  EXPECT_FALSE(old["result"].contains("structuredContent"));
  EXPECT_EQ(old["result"]["content"].size(), 2u);  // the rendering, then the JSON
}

TEST_F(ProtocolTest, AnswersBadCallsWithTheSpecsErrors) {
  EXPECT_EQ(Call(Request("tools/call", {{"name", "nope"}}))["error"]["code"], kInvalidParams);
  EXPECT_EQ(Call(Request("tools/call", json::object()))["error"]["code"], kInvalidParams);
  EXPECT_EQ(Call(Request("tools/call", {{"name", "echo"}, {"arguments", "x"}}))["error"]["code"],
            kInvalidParams);
  json bad = Call(Request("tools/call", {{"name", "echo"}, {"arguments", {{"text", 3}}}}));
  EXPECT_EQ(bad["result"]["isError"], true);
  EXPECT_EQ(bad["result"]["content"][0]["text"],
            "Invalid arguments for echo: text must be a string, got an integer");
  EXPECT_FALSE(bad["result"].contains("structuredContent"));
  json boom = Call(Request("tools/call", {{"name", "boom"}}));
  EXPECT_EQ(boom["error"]["code"], kInternalError);
  EXPECT_EQ(boom.dump().find("secret"), std::string::npos);
  EXPECT_EQ(Call(Request("resources/list"))["error"]["code"], kMethodNotFound);
  EXPECT_EQ(Call(Request("initialize", {{"protocolVersion", "2025-11-25"}}))["error"]["code"],
            kInvalidRequest);
  EXPECT_EQ(Call(Request("ping"))["result"], json::object());
  EXPECT_FALSE(protocol_.Handle(Message{MessageKind::kNotification, nullptr, "notifications/x", {}},
                                ToolContext{"ws1", "2025-11-25"}));
}

TEST_F(ProtocolTest, TheStatelessRevisionDiscoversAndMarksItsResults) {
  const std::string v = "2026-07-28";
  json discover = Call(Request("server/discover"), v);
  const json& d = discover["result"];
  EXPECT_EQ(d["supportedVersions"], json::array({v}));
  EXPECT_TRUE(d["capabilities"].contains("tools"));
  EXPECT_EQ(d["resultType"], "complete");
  EXPECT_EQ(d["_meta"]["io.modelcontextprotocol/serverInfo"]["version"], "1.2.3");
  EXPECT_TRUE(d["ttlMs"].is_number_integer());
  EXPECT_EQ(d["cacheScope"], "public");

  json list = Call(Request("tools/list"), v);
  EXPECT_EQ(list["result"]["resultType"], "complete");
  EXPECT_EQ(list["result"]["ttlMs"], kToolListTtlMs);
  EXPECT_EQ(list["result"]["cacheScope"], "public");
  EXPECT_TRUE(list["result"]["tools"][0].contains("outputSchema"));
  json call = Call(Request("tools/call", {{"name", "echo"}, {"arguments", {{"text", "hi"}}}}), v);
  EXPECT_EQ(call["result"]["resultType"], "complete");
  EXPECT_EQ(call["result"]["structuredContent"]["text"], "hi");
  EXPECT_TRUE(call["result"]["_meta"].contains("io.modelcontextprotocol/serverInfo"));

  // No handshake and no ping in this revision; and no discovery in the session-based ones.
  EXPECT_EQ(Call(Request("ping"), v)["error"]["code"], kMethodNotFound);
  EXPECT_EQ(Call(Request("initialize", {{"protocolVersion", v}}), v)["error"]["code"],
            kMethodNotFound);
  EXPECT_EQ(Call(Request("server/discover"))["error"]["code"], kMethodNotFound);
  EXPECT_FALSE(Call(Request("tools/list"))["result"].contains("ttlMs"));
}

}  // namespace
}  // namespace engram::mcp
