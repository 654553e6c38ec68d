#include "mcp/json_rpc.h"

#include <gtest/gtest.h>

namespace engram::mcp {
namespace {

using json = nlohmann::json;

std::optional<RpcError> Read(const std::string& text, Message* m) {
  json value;
  if (auto e = ParseBody(text, 1 << 20, &value)) return e;
  return ReadMessage(value, m);
}

TEST(JsonRpcTest, ClassifiesRequestsNotificationsAndResponses) {
  Message m;
  ASSERT_FALSE(Read(R"({"jsonrpc":"2.0","id":7,"method":"ping"})", &m));
  EXPECT_EQ(m.kind, MessageKind::kRequest);
  EXPECT_EQ(m.id, 7);
  EXPECT_TRUE(m.params.is_object());
  ASSERT_FALSE(Read(R"({"jsonrpc":"2.0","method":"notifications/initialized"})", &m));
  EXPECT_EQ(m.kind, MessageKind::kNotification);
  ASSERT_FALSE(Read(R"({"jsonrpc":"2.0","id":"a","result":{}})", &m));
  EXPECT_EQ(m.kind, MessageKind::kResponse);
}

TEST(JsonRpcTest, RefusesWhatMcpForbids) {
  Message m;
  auto e = Read("{not json", &m);
  ASSERT_TRUE(e);
  EXPECT_EQ(e->code, kParseError);
  EXPECT_EQ(Read(R"({"jsonrpc":"2.0","id":1,"id":2,"method":"x"})", &m)->code, kParseError);
  EXPECT_EQ(Read("[1]", &m)->code, kInvalidRequest);
  EXPECT_EQ(Read(R"({"id":1,"method":"ping"})", &m)->code, kInvalidRequest);
  auto version = Read(R"({"jsonrpc":"1.0","id":3,"method":"ping"})", &m);
  EXPECT_EQ(version->code, kInvalidRequest);
  EXPECT_EQ(version->id, 3);  // answered to the request it names
  EXPECT_EQ(Read(R"({"jsonrpc":"2.0","id":null,"method":"ping"})", &m)->code, kInvalidRequest);
  EXPECT_EQ(Read(R"({"jsonrpc":"2.0","id":1.5,"method":"ping"})", &m)->code, kInvalidRequest);
  EXPECT_EQ(Read(R"({"jsonrpc":"2.0","id":1,"method":7})", &m)->code, kInvalidRequest);
  EXPECT_EQ(Read(R"({"jsonrpc":"2.0","id":1,"method":"x","params":[1]})", &m)->code,
            kInvalidParams);
  EXPECT_EQ(Read(R"({"jsonrpc":"2.0","id":1})", &m)->code, kInvalidRequest);
  EXPECT_EQ(Read(R"({"jsonrpc":"2.0","id":1,"result":1,"error":{}})", &m)->code, kInvalidRequest);
}

TEST(JsonRpcTest, BuildsResponses) {
  EXPECT_EQ(ResultResponse(1, json::object()).dump(), R"({"id":1,"jsonrpc":"2.0","result":{}})");
  json e = ErrorResponse(nullptr, kMethodNotFound, "nope");
  EXPECT_TRUE(e["id"].is_null());
  EXPECT_EQ(e["error"]["code"], -32601);
  EXPECT_FALSE(e["error"].contains("data"));
}

}  // namespace
}  // namespace engram::mcp
