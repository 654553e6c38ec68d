#include "mcp/stateless_request.h"

#include <gtest/gtest.h>

namespace engram::mcp {
namespace {

using json = nlohmann::json;

json Meta(const std::string& version = "2026-07-28") {
  return {{kProtocolVersionKey, version}, {kClientCapabilitiesKey, json::object()}};
}

Message Call(const std::string& tool, json meta = Meta()) {
  return Message{MessageKind::kRequest,
                 7,
                 "tools/call",
                 {{"name", tool}, {"arguments", json::object()}, {"_meta", std::move(meta)}}};
}

struct Headers {
  std::string version = "2026-07-28";
  std::string method = "tools/call";
  std::string name = "echo";
  bool with_version = true, with_method = true, with_name = true;
  StandardHeaders Get() const {
    return {with_version ? &version : nullptr, with_method ? &method : nullptr,
            with_name ? &name : nullptr};
  }
};

std::optional<StatelessRefusal> Check(const Message& m, const Headers& h) {
  std::string version;
  return CheckStatelessMessage(m, h.Get(), &version);
}

TEST(StatelessRequestTest, AcceptsAWellFormedRequestAndNamesItsRevision) {
  std::string version;
  Headers h;
  EXPECT_FALSE(CheckStatelessMessage(Call("echo"), h.Get(), &version));
  EXPECT_EQ(version, "2026-07-28");
  json meta = Meta();
  meta[kClientInfoKey] = {{"name", "host"}, {"version", "1"}};
  EXPECT_FALSE(Check(Call("echo", meta), h));
  h.version = " 2026-07-28 ";  // optional white space around a field value
  EXPECT_FALSE(Check(Call("echo"), h));
}

TEST(StatelessRequestTest, RefusesABadEnvelopeWithInvalidParams) {
  Headers h;
  for (const json& meta :
       {json{{kProtocolVersionKey, "2026-07-28"}},                                   // no caps
        json{{kProtocolVersionKey, 5}, {kClientCapabilitiesKey, json::object()}},    // not a string
        json{{kProtocolVersionKey, "2026-07-28"}, {kClientCapabilitiesKey, "all"}},  // not object
        json{{kProtocolVersionKey, "2026-07-28"},
             {kClientCapabilitiesKey, json::object()},
             {kClientInfoKey, {{"name", "x"}}}}}) {  // clientInfo without a version
    auto r = Check(Call("echo", meta), h);
    ASSERT_TRUE(r) << meta;
    EXPECT_EQ(r->http_status, 400);
    EXPECT_EQ(r->code, kInvalidParams);
    EXPECT_TRUE(r->data.contains("envelope")) << r->data;
  }
  // Only the header says stateless: the envelope is missing.
  Message bare{MessageKind::kRequest, 1, "tools/list", json::object()};
  auto r = Check(bare, h);
  ASSERT_TRUE(r);
  EXPECT_EQ(r->code, kInvalidParams);
  Message init{MessageKind::kRequest, 1, "initialize", {{"protocolVersion", "2025-11-25"}}};
  r = Check(init, h);
  ASSERT_TRUE(r);
  EXPECT_EQ(r->code, kHeaderMismatch);
}

TEST(StatelessRequestTest, RefusesHeadersThatContradictTheBody) {
  struct Case {
    const char* what;
    std::function<void(Headers&)> change;
  };
  for (const Case& c : std::vector<Case>{
           {"other version", [](Headers& h) { h.version = "2025-11-25"; }},
           {"other method", [](Headers& h) { h.method = "tools/list"; }},
           {"no version", [](Headers& h) { h.with_version = false; }},
           {"no method", [](Headers& h) { h.with_method = false; }},
           {"no name", [](Headers& h) { h.with_name = false; }},
           {"other name", [](Headers& h) { h.name = "boom"; }},
           {"bad base64", [](Headers& h) { h.name = "=?base64?ZWNo?="; }},
       }) {
    Headers h;
    c.change(h);
    auto r = Check(Call("echo"), h);
    ASSERT_TRUE(r) << c.what;
    EXPECT_EQ(r->http_status, 400) << c.what;
    EXPECT_EQ(r->code, kHeaderMismatch) << c.what;
    EXPECT_TRUE(r->data.contains("mismatch")) << c.what;
  }
  Headers encoded;
  encoded.name = "=?base64?ZWNobw==?=";  // "echo"
  EXPECT_FALSE(Check(Call("echo"), encoded));
  // Methods without a name need no Mcp-Name; notifications need no headers at all.
  Headers list;
  list.method = "tools/list";
  list.with_name = false;
  EXPECT_FALSE(Check(Message{MessageKind::kRequest, 1, "tools/list", {{"_meta", Meta()}}}, list));
  Headers none;
  none.with_version = none.with_method = none.with_name = false;
  EXPECT_FALSE(Check(Message{MessageKind::kNotification,
                             nullptr,
                             "notifications/cancelled",
                             {{"_meta", {{kProtocolVersionKey, "2026-07-28"}}}}},
                     none));
}

TEST(StatelessRequestTest, AnUnservedRevisionListsTheServedOnes) {
  Headers h;
  h.version = "2027-01-01";
  auto r = Check(Call("echo", Meta("2027-01-01")), h);
  ASSERT_TRUE(r);
  EXPECT_EQ(r->http_status, 400);
  EXPECT_EQ(r->code, kUnsupportedProtocolVersion);
  EXPECT_EQ(r->data["supported"], json::array({"2026-07-28"}));
  EXPECT_EQ(r->data["requested"], "2027-01-01");
}

TEST(StatelessRequestTest, TellsStatelessTrafficFromSessionTraffic) {
  const std::string modern = "2026-07-28", later = "2027-03-01", old = "2025-11-25";
  json claimed = {
      {"jsonrpc", "2.0"}, {"id", 1}, {"method", "tools/list"}, {"params", {{"_meta", Meta()}}}};
  json plain = {{"jsonrpc", "2.0"}, {"id", 1}, {"method", "tools/list"}};
  EXPECT_TRUE(IsStatelessTraffic(claimed, nullptr));
  EXPECT_FALSE(IsStatelessTraffic(plain, nullptr));
  EXPECT_FALSE(IsStatelessTraffic(plain, &old));
  EXPECT_TRUE(IsStatelessTraffic(plain, &modern));
  EXPECT_TRUE(IsStatelessTraffic(plain, &later));
  EXPECT_TRUE(IsStatelessTraffic(json::array({plain, claimed}), nullptr));
  EXPECT_FALSE(IsStatelessTraffic(json::array({plain}), nullptr));
  EXPECT_FALSE(IsStatelessTraffic(json{{"jsonrpc", "2.0"}, {"id", 1}, {"result", {}}}, &modern));
  EXPECT_FALSE(IsStatelessEra("2026-7-28"));
  EXPECT_FALSE(IsStatelessEra("2025-11-25"));
}

TEST(StatelessRequestTest, HeaderValuesRoundTrip) {
  for (const std::string& v :
       std::vector<std::string>{"echo", "memory_recall", "naïve", " padded", "a\r\nInjected: 1",
                                "=?base64?plain?=", std::string("nul\0byte", 8)}) {
    const std::string encoded = EncodeHeaderValue(v);
    for (char c : encoded) EXPECT_TRUE(c >= 0x20 && c < 0x7f) << v;
    auto decoded = DecodeHeaderValue(encoded);
    ASSERT_TRUE(decoded) << v;
    EXPECT_EQ(*decoded, v);
  }
  EXPECT_EQ(EncodeHeaderValue("echo"), "echo");
  EXPECT_FALSE(DecodeHeaderValue("=?base64?ZWNobw?="));     // padding left out: not canonical
  EXPECT_FALSE(DecodeHeaderValue("=?base64?/w==?="));       // not UTF-8
  EXPECT_EQ(*DecodeHeaderValue("=?base64?"), "=?base64?");  // no sentinel: the value itself
}

}  // namespace
}  // namespace engram::mcp
