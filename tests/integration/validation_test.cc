// Malformed requests: each gets the right 4xx and the error envelope naming the field, the server
// stays up, and nothing of a rejected request is stored (docs/api/README.md, Common + section 2).
#include <functional>

#include "common/codec.h"
#include "test_util.h"
#include "zip_writer.h"

namespace engram::testing {
namespace {

using nlohmann::json;

constexpr int kMaxBodyBytes = 1 << 20;

class ValidationTest : public SharedServerTest {
 protected:
  ServerOptions Options() const override {
    ServerOptions o;
    o.extra_args = {"--max-body-bytes", std::to_string(kMaxBodyBytes)};
    return o;
  }
};

struct Case {
  std::string name;
  std::string method;
  std::string path;
  std::string body;
  int status;
  std::string code;
  std::string field;  // the message must mention this (case-insensitive)
};

// Builds the table. Every add case carries a unique word in some valid-looking message text so
// that a partial write would be visible to a search for the user `user`.
std::vector<Case> BuildCases(const std::string& user, std::vector<std::string>* words) {
  auto word = [&] {
    words->push_back(UniqueWord());
    return words->back();
  };
  auto good_msg = [&] { return Message("Stored by mistake: " + word() + ".", 1704067200000); };
  auto add = [&] {
    return AddBody(UniqueId("eval:run:bad"), user, "s-bad", json::array({good_msg()}));
  };
  // A body whose second message is broken: nothing of the first may be stored either.
  auto add2 = [&](const std::function<void(json&)>& break_it) {
    json b =
        AddBody(UniqueId("eval:run:bad"), user, "s-bad", json::array({good_msg(), good_msg()}));
    break_it(b["messages"][1]);
    return b.dump();
  };
  auto add_with = [&](const std::function<void(json&)>& f) {
    json b = add();
    f(b);
    return b.dump();
  };
  auto search_with = [&](const std::function<void(json&)>& f) {
    json b = SearchBody(user, "stored by mistake", 10);
    f(b);
    return b.dump();
  };
  auto text_part = [&] { return json{{"type", "text"}, {"text", "Picture " + word()}}; };
  auto image_url = [](const std::string& url) {
    return json{{"type", "image_url"}, {"image_url", {{"url", url}}}};
  };

  const std::string add_path(kAddPath), search_path(kSearchPath);
  const std::string kV4 = "/v4/openapi/workspaces/default/memory/agentic-memory";
  const std::string kBad = "InvalidParameter";
  std::vector<Case> c = {
      {"add_bad_json", "POST", add_path, R"({"request_id": "x", "messages": [)", 400, kBad, "json"},
      {"add_body_array", "POST", add_path, "[" + add().dump() + "]", 400, kBad, "object"},
      {"add_body_string", "POST", add_path, R"("hello")", 400, kBad, "object"},
      {"add_invalid_utf8", "POST", add_path,
       R"({"request_id": "u8", "user_id": ")" + user +
           R"(", "session_id": "s", "messages": [{"role": "user", "content": "bad )" +
           std::string("\xff\xfe\xc3") + R"( bytes"}]})",
       400, kBad, ""},
      {"add_nul_in_content", "POST", add_path,
       add2([](json& m) { m["content"] = std::string("before\0after", 12); }), 400, kBad,
       "messages[1].content"},
      {"add_deeply_nested_body", "POST", add_path,
       std::string(100000, '[') + std::string(100000, ']'), 400, kBad, ""},
      {"add_deeply_nested_content", "POST", add_path, add2([](json& m) {
         json deep = json::array();
         for (int i = 0; i < 2000; ++i) deep = json::array({std::move(deep)});
         m["content"] = std::move(deep);
       }),
       400, kBad, ""},
      {"add_empty_body", "POST", add_path, "", 400, kBad, ""},
      {"add_missing_request_id", "POST", add_path, add_with([](json& b) { b.erase("request_id"); }),
       400, kBad, "request_id"},
      {"add_missing_messages", "POST", add_path, add_with([](json& b) { b.erase("messages"); }),
       400, kBad, "messages"},
      {"add_missing_user_id", "POST", add_path, add_with([](json& b) { b.erase("user_id"); }), 400,
       kBad, "user_id"},
      {"add_missing_session_id", "POST", add_path, add_with([](json& b) { b.erase("session_id"); }),
       400, kBad, "session_id"},
      {"add_messages_object", "POST", add_path,
       add_with([&](json& b) { b["messages"] = good_msg(); }), 400, kBad, "messages"},
      {"add_messages_string", "POST", add_path,
       add_with([&](json& b) { b["messages"] = "Stored by mistake: " + word(); }), 400, kBad,
       "messages"},
      {"add_user_id_number", "POST", add_path, add_with([](json& b) { b["user_id"] = 42; }), 400,
       kBad, "user_id"},
      {"add_session_id_number", "POST", add_path, add_with([](json& b) { b["session_id"] = 7; }),
       400, kBad, "session_id"},
      {"add_request_id_object", "POST", add_path,
       add_with([](json& b) { b["request_id"] = json::object(); }), 400, kBad, "request_id"},
      {"add_empty_user_id", "POST", add_path, add_with([](json& b) { b["user_id"] = ""; }), 400,
       kBad, "user_id"},
      {"add_empty_request_id", "POST", add_path, add_with([](json& b) { b["request_id"] = ""; }),
       400, kBad, "request_id"},
      {"add_user_id_too_long", "POST", add_path,
       add_with([](json& b) { b["user_id"] = std::string(300, 'u'); }), 400, kBad, "user_id"},
      {"add_timestamp_string", "POST", add_path,
       add2([](json& m) { m["timestamp"] = "2024-01-01"; }), 400, kBad, "timestamp"},
      {"add_empty_messages", "POST", add_path,
       add_with([](json& b) { b["messages"] = json::array(); }), 400, kBad, "messages"},
      {"add_message_not_object", "POST", add_path, add2([](json& m) { m = "just a string"; }), 400,
       kBad, "messages"},
      {"add_role_system", "POST", add_path, add2([](json& m) { m["role"] = "system"; }), 400, kBad,
       "role"},
      {"add_role_robot", "POST", add_path, add2([](json& m) { m["role"] = "robot"; }), 400, kBad,
       "role"},
      {"add_role_missing", "POST", add_path, add2([](json& m) { m.erase("role"); }), 400, kBad,
       "role"},
      {"add_content_missing", "POST", add_path, add2([](json& m) { m.erase("content"); }), 400,
       kBad, "content"},
      {"add_content_number", "POST", add_path, add2([](json& m) { m["content"] = 12; }), 400, kBad,
       "content"},
      {"add_unknown_part_type", "POST", add_path, add2([&](json& m) {
         m["content"] = json::array({text_part(), {{"type", "audio"}, {"audio", "AAAA"}}});
       }),
       400, kBad, "type"},
      {"add_text_part_without_text", "POST", add_path, add2([&](json& m) {
         m["content"] = json::array({text_part(), {{"type", "text"}}});
       }),
       400, kBad, "text"},
      {"add_image_url_bad_base64", "POST", add_path, add2([&](json& m) {
         m["content"] =
             json::array({text_part(), image_url("data:image/png;base64,!!!not*base64###")});
       }),
       400, kBad, "image"},
      {"add_image_url_not_png_bytes", "POST", add_path, add2([&](json& m) {
         m["content"] =
             json::array({text_part(), image_url("data:image/png;base64,aGVsbG8gd29ybGQ=")});
       }),
       400, kBad, "image"},
      {"add_image_part_bad_base64", "POST", add_path, add2([&](json& m) {
         m["content"] =
             json::array({text_part(), {{"type", "image"}, {"image", "%%%% not base64 %%%%"}}});
       }),
       400, kBad, "image"},
      {"add_image_part_not_an_image", "POST", add_path, add2([&](json& m) {
         m["content"] =
             json::array({text_part(), {{"type", "image"}, {"image", "aGVsbG8gd29ybGQ="}}});
       }),
       400, kBad, "image"},
      {"search_bad_json", "POST", search_path, R"({"query": "x", )", 400, kBad, "json"},
      {"search_body_array", "POST", search_path, "[]", 400, kBad, "object"},
      {"search_missing_query", "POST", search_path, search_with([](json& b) { b.erase("query"); }),
       400, kBad, "query"},
      {"search_empty_query", "POST", search_path, search_with([](json& b) { b["query"] = ""; }),
       400, kBad, "query"},
      {"search_query_number", "POST", search_path, search_with([](json& b) { b["query"] = 5; }),
       400, kBad, "query"},
      {"search_missing_user_id", "POST", search_path,
       search_with([](json& b) { b.erase("user_id"); }), 400, kBad, "user_id"},
      {"search_user_id_too_long", "POST", search_path,
       search_with([](json& b) { b["user_id"] = std::string(300, 'u'); }), 400, kBad, "user_id"},
      // A well-formed number out of range is 422, as the Leaderboard's clients expect.
      {"search_top_k_0", "POST", search_path, search_with([](json& b) { b["top_k"] = 0; }), 422,
       "OutOfRange", "top_k"},
      {"search_top_k_101", "POST", search_path, search_with([](json& b) { b["top_k"] = 101; }), 422,
       "OutOfRange", "top_k"},
      {"search_top_k_negative", "POST", search_path, search_with([](json& b) { b["top_k"] = -1; }),
       422, "OutOfRange", "top_k"},
      {"search_top_k_string", "POST", search_path, search_with([](json& b) { b["top_k"] = "10"; }),
       400, kBad, "top_k"},
      {"search_options_string", "POST", search_path,
       search_with([](json& b) { b["options"] = "A. yes"; }), 400, kBad, "options"},
      {"search_options_numbers", "POST", search_path, search_with([](json& b) {
         b["options"] = json::array({1, 2});
       }),
       400, kBad, "options"},
      {"unknown_route", "GET", "/no/such/route", "", 404, "NotFound", ""},
      {"unknown_leaderboard_route", "POST", "/leaderboard/delete", add().dump(), 404, "NotFound",
       ""},
      {"get_on_add", "GET", add_path, "", 405, "MethodNotAllowed", ""},
      {"get_on_search", "GET", search_path, "", 405, "MethodNotAllowed", ""},
      {"delete_on_add", "DELETE", add_path, "", 405, "MethodNotAllowed", ""},
      // Ids that no add can store (a JSON string refuses NUL; an escape is %XX) are refused
      // wherever an id is named: path, query string or body.
      {"delete_user_nul", "DELETE", "/leaderboard/users/a%00b", "", 400, kBad, "user_id"},
      {"delete_user_bad_escape", "DELETE", "/leaderboard/users/a%zzb", "", 400, kBad, "user_id"},
      {"delete_user_not_utf8", "DELETE", "/leaderboard/users/%FF", "", 400, kBad, "user_id"},
      {"v4_list_nul", "GET", kV4 + "/memories?user_id=a%00b", "", 400, kBad, "user_id"},
      {"v4_list_bad_escape", "GET", kV4 + "/memories?user_id=a%zzb", "", 400, kBad, "user_id"},
      {"v4_get_nul", "GET", kV4 + "/memories/m%00", "", 400, kBad, "memory_id"},
  };
  return c;
}

TEST_F(ValidationTest, MalformedRequestsGetPreciseErrorsAndStoreNothing) {
  std::string user = UniqueId("eval:run:validation");
  std::vector<std::string> words;
  std::vector<Case> cases = BuildCases(user, &words);
  ASSERT_GE(cases.size(), 25u);
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name + ": " + c.method + " " + c.path + " " + c.body.substr(0, 300));
    HttpResponse resp = client().Request(c.method, c.path, c.body, {});
    EXPECT_TRUE(IsError(resp, c.status, c.code, c.field));
  }
  // The server survived all of it and stored none of it.
  EXPECT_EQ(client().Get("/healthz").status, 200);
  for (const std::string& w : words) {
    EXPECT_EQ(CountContaining(SearchData(client(), user, w), w), 0)
        << "rejected request left " << w << " stored";
  }
}

TEST_F(ValidationTest, RejectedRequestIdIsNotBurned) {
  // A request rejected as invalid must not reserve its request_id: the corrected body succeeds.
  std::string user = UniqueId("user");
  std::string word = UniqueWord();
  json good = AddBody(UniqueId("eval:run:chunk"), user, "s",
                      json::array({Message("Corrected note " + word)}));
  json bad = good;
  bad["messages"][0]["role"] = "robot";
  EXPECT_TRUE(IsError(client().Post(kAddPath, bad), 400, "InvalidParameter", "role"));
  EXPECT_TRUE(IsAddSuccess(client().Post(kAddPath, good), good));
  EXPECT_EQ(CountContaining(SearchData(client(), user, word), word), 1);
}

TEST_F(ValidationTest, BodyOverLimitIsPayloadTooLarge) {
  std::string user = UniqueId("user");
  std::string word = UniqueWord();
  json body = AddBody(UniqueId("eval:run:big"), user, "s",
                      json::array({Message(word + " " + std::string(2 * kMaxBodyBytes, 'a'))}));
  HttpResponse resp = client().Post(kAddPath, body);
  EXPECT_TRUE(IsError(resp, 413, "PayloadTooLarge"));

  // The same with a chunked body (no Content-Length up front).
  HttpResponse chunked = client().Post(kAddPath, body, {{"Transfer-Encoding", "chunked"}});
  EXPECT_TRUE(IsError(chunked, 413, "PayloadTooLarge")) << "chunked";

  EXPECT_EQ(client().Get("/healthz").status, 200);
  EXPECT_EQ(CountContaining(SearchData(client(), user, word), word), 0);
}

TEST(ValidationLimitTest, BodyJustUnderLimitIsAccepted) {
  // Half the body limit of ordinary prose in one message: answered within the client's 10 s.
  // Own server, killed at the end: how long a SIGTERM takes afterwards is DurabilityTest's concern.
  ENGRAM_REQUIRE_BINARY();
  ServerOptions options;
  options.extra_args = {"--max-body-bytes", std::to_string(kMaxBodyBytes)};
  ServerProcess server(options);
  ASSERT_TRUE(server.Start());
  HttpClient client(server.BaseUrl());
  std::string user = UniqueId("user");
  std::string word = UniqueWord();
  std::string prose;
  while (prose.size() < kMaxBodyBytes / 2)
    prose += "The quick brown fox jumps over the lazy dog near the river bank. ";
  json ok = AddBody(UniqueId("eval:run:big"), user, "s",
                    json::array({Message("Long note " + word + ". " + prose)}));
  HttpResponse resp = client.Post(kAddPath, ok);
  EXPECT_TRUE(IsAddSuccess(resp, ok)) << "a " << ok.dump().size() << "-byte add (limit "
                                      << kMaxBodyBytes << ") took " << resp.seconds << " s";
  if (resp.status == 200) {
    EXPECT_EQ(CountContaining(SearchData(client, user, word), word), 1);
  }
  server.Kill();
}

TEST(ValidationLimitTest, ConfiguredLimitsApply) {
  // API.md: "Limits (configurable)". Small limits, each hit names what it limits; nothing stored.
  ENGRAM_REQUIRE_BINARY();
  ServerOptions options;
  options.extra_args = {"--max-top-k",       "5",    "--max-metadata-bytes",      "100",
                        "--max-image-bytes", "2048", "--max-request-image-bytes", "4096"};
  ServerProcess server(options);
  ASSERT_TRUE(server.Start());
  HttpClient client(server.BaseUrl());
  const std::string p4 = "/v4/openapi/workspaces/default/memory/agentic-memory/memories/";
  EXPECT_TRUE(
      IsError(client.Post(p4 + "search", json{{"query", "q"}, {"user_id", "u"}, {"top_k", 6}}), 400,
              "InvalidParameter", "top_k"));
  EXPECT_EQ(client.Post(p4 + "search", json{{"query", "q"}, {"user_id", "u"}, {"top_k", 5}}).status,
            200);
  json add = {{"messages", "I like tea"},
              {"user_id", "u"},
              {"infer", false},
              {"metadata", {{"note", std::string(200, 'x')}}}};
  EXPECT_TRUE(IsError(client.Post(p4 + "add", add), 400, "InvalidParameter", "metadata"));
  add["metadata"] = {{"note", "short"}};
  EXPECT_EQ(client.Post(p4 + "add", add).status, 200);

  // A 3 KiB image behind a real PNG signature is over the 2 KiB per-image limit.
  std::string user = UniqueId("user");
  std::string word = UniqueWord();
  std::string bytes = TinyPngBytes();
  bytes.resize(3 << 10, '\0');
  json content = json::array({{{"type", "text"}, {"text", "Picture " + word}}, ImagePart(bytes)});
  HttpResponse resp = client.Post(
      kAddPath, AddBody(UniqueId("eval:run:img"), user, "s", json::array({Message(content)})));
  EXPECT_TRUE(IsError(resp, 413, "PayloadTooLarge")) << resp.Describe();
  EXPECT_EQ(CountContaining(SearchData(client, user, word), word), 0);
  server.Kill();
}

TEST_F(ValidationTest, MalformedHttpDoesNotHurtTheServer) {
  const int port = server().port();
  struct RawCase {
    std::string name;
    std::string request;
  };
  std::vector<RawCase> raws = {
      {"garbage_request_line", "GARBAGE\r\n\r\n"},
      {"bad_version", "GET /healthz HTTP/9.9\r\nHost: 127.0.0.1\r\n\r\n"},
      {"header_without_colon", "GET /healthz HTTP/1.1\r\nHost x\r\n\r\n"},
      {"bad_content_length",
       "POST /leaderboard/search HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: abc\r\n\r\n{}"},
      {"bad_chunk_size",
       "POST /leaderboard/search HTTP/1.1\r\nHost: 127.0.0.1\r\nTransfer-Encoding: "
       "chunked\r\n\r\nzz\r\n{}\r\n0\r\n\r\n"},
      {"huge_header", "GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Big: " +
                          std::string(200 * 1024, 'h') + "\r\n\r\n"},
      {"nul_bytes", std::string("GET /\0\0\0 HTTP/1.1\r\n\r\n", 22)},
  };
  for (const RawCase& rc : raws) {
    SCOPED_TRACE(rc.name);
    std::string reply = RawExchange(port, rc.request, std::chrono::seconds(3));
    int status = RawStatus(reply);
    // Either a 4xx answer or a closed connection; never a 2xx/5xx, never a hang or crash.
    EXPECT_TRUE(status == 0 || (status >= 400 && status < 500)) << reply.substr(0, 300);
    HttpResponse health = client().Get("/healthz");
    ASSERT_EQ(health.status, 200) << "server unhealthy after " << rc.name << ": "
                                  << health.Describe() << "\n"
                                  << server().Output();
  }
  // Keep-alive with two pipelined requests on one connection: two answers, in order.
  {
    RawSocket s;
    ASSERT_TRUE(s.Connect(port));
    std::string search = SearchBody(UniqueId("u"), "pipelined").dump();
    std::string req =
        "POST /leaderboard/search HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: "
        "application/json\r\nContent-Length: " +
        std::to_string(search.size()) + "\r\n\r\n" + search;
    ASSERT_TRUE(s.Send(req + "GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"));
    std::string both = s.Receive(std::chrono::milliseconds(1500), /*stop_at_message_end=*/false);
    size_t second = both.find("HTTP/1.1", 1);
    EXPECT_EQ(RawStatus(both), 200) << both.substr(0, 300);
    ASSERT_NE(second, std::string::npos)
        << "no second response on a keep-alive connection: " << both.substr(0, 500);
    EXPECT_EQ(RawStatus(std::string_view(both).substr(second)), 200) << both.substr(second, 300);
    EXPECT_NE(both.find("\"data\""), std::string::npos) << both.substr(0, 500);
  }
  // Truncated body: Content-Length promises more than is sent, then the client goes away.
  {
    RawSocket s;
    ASSERT_TRUE(s.Connect(port));
    s.Send(
        "POST /leaderboard/add HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: "
        "application/json\r\nContent-Length: 1000\r\n\r\n{\"req");
  }
  EXPECT_EQ(client().Get("/healthz").status, 200);
}

// Bodies that are not JSON get a 400 naming what is wrong and the byte offset, and never echo the
// request's content.
TEST_F(ValidationTest, InvalidJsonNamesTheProblemAndTheByteOffset) {
  const std::string secret = UniqueWord();
  const std::string head = R"({"request_id":"r","user_id":"u","session_id":"s","messages":[)";
  struct BadJson {
    std::string name;
    std::string body;
    std::string expected;  // in the message
  };
  const std::vector<BadJson> cases = {
      {"invalid UTF-8", head + R"({"role":"user","content":")" + secret + "\xff\xfe" + R"("}]})",
       "invalid string: ill-formed UTF-8 byte 0xFF at byte offset"},
      {"lone surrogate", head + R"({"role":"user","content":")" + secret + R"(\ud800"}]})",
       "invalid string: surrogate U+D800..U+DBFF must be followed by U+DC00..U+DFFF at byte "
       "offset"},
      {"number out of range",
       head + R"({"role":"user","content":")" + secret + R"(","timestamp":1e999}]})",
       "number out of range at byte offset"},
      {"duplicate key", head + R"({"role":"user","content":")" + secret + R"(","role":"user"}]})",
       "duplicate key \"role\" in messages[0] at byte offset"},
  };
  for (const BadJson& c : cases) {
    SCOPED_TRACE(c.name);
    HttpResponse resp = client().Post(kAddPath, std::string_view(c.body));
    EXPECT_TRUE(IsError(resp, 400, "InvalidParameter", c.expected));
    const std::string message = resp.Json().value("message", "");
    EXPECT_NE(message.find("request body is not valid JSON: "), std::string::npos) << message;
    EXPECT_EQ(message.find(secret), std::string::npos) << message;
  }
  EXPECT_EQ(client().Get("/healthz").status, 200);
}

// A skill archive whose _meta.json nests 100,000 levels once took the whole server down (a stack
// overflow while re-serialising it). Now it is a 400, and the server, here under a memory limit
// so that a runaway allocation would fail rather than swap, keeps answering.
TEST(DeepJsonTest, DeeplyNestedSkillMetaJsonIsRefusedAndTheServerStaysUp) {
  ENGRAM_REQUIRE_BINARY();
  ServerOptions options;
  options.memory_limit_mb = 1536;  // as the skill tests of hostile front matter
  ServerProcess server(options);
  ASSERT_TRUE(server.Start());

  HttpClient client(server.BaseUrl());
  std::string deep;
  for (int i = 0; i < 100000; ++i) deep += "{\"a\":";
  deep += "1" + std::string(100000, '}');
  const std::string zip = MakeZip(
      {{"SKILL.md", SkillMd({"name: deep", "description: nested meta"})}, {"_meta.json", deep}});
  const std::string path = "/v3/openapi/workspaces/default/memory/agentic-memory/skills/import";
  HttpResponse resp =
      client.Post(path, nlohmann::json{{"zip_base64", Base64Encode(zip)}, {"user_id", "u"}});
  EXPECT_TRUE(IsError(resp, 400, "InvalidParameter", "_meta.json nests deeper than 64 levels"));
  EXPECT_EQ(client.Get("/healthz").status, 200) << server.Output();
  // The same archive with a flat _meta.json imports.
  const std::string flat =
      MakeZip({{"SKILL.md", SkillMd({"name: deep", "description: nested meta"})},
               {"_meta.json", R"({"owner":"x"})"}});
  resp = client.Post(path, nlohmann::json{{"zip_base64", Base64Encode(flat)}, {"user_id", "u"}});
  EXPECT_EQ(resp.status, 200) << resp.Describe();
}

}  // namespace
}  // namespace engram::testing
