// The Streamable HTTP endpoint behind the server's App: keys and workspaces checked from the
// request head, then origin, headers, sessions, batches and the JSON-RPC answers.
#include "mcp/http_endpoint.h"

#include <gtest/gtest.h>

#include "api/app.h"
#include "common/thread_util.h"
#include "mcp/http_routes.h"
#include "mcp/test_tools.h"

namespace engram::mcp {
namespace {

using json = nlohmann::json;

// The test tools plus "shelf", a read whose probe says whether what it reads is loaded (its
// `loaded` argument), as the memory, knowledge and skill reads ask their services.
ToolRegistry WithAProbedRead(ToolRegistry tools) {
  tools.Add(Tool{
      .name = "shelf",
      .title = "Shelf",
      .description = "reads a shard",
      .input_schema = {{"type", "object"}},
      .output_schema = {{"type", "object"}},
      .hints = {.read_only = true, .idempotent = true},
      .ready = [](const json& args, const ToolContext&) { return args.value("loaded", false); },
      .handler = [](const json&, const ToolContext&) -> Result<ToolResult> {
        return ToolResult{};
      }});
  return tools;
}

class HttpEndpointTest : public ::testing::Test {
 protected:
  HttpEndpointTest()
      : tools_(WithAProbedRead(TestTools())),
        protocol_(&tools_, ServerInfo{}),
        auth_(*ApiKeyAuth::FromSpecs({"k1", "k2:ws2"})),
        endpoint_(&protocol_, HttpEndpointOptions{}),
        app_(Routes(), &auth_, &metrics_) {}

  Router Routes() {
    Router router;
    RegisterMcpRoutes(router, &endpoint_);
    return router;
  }

  static HttpRequest Request(const std::string& method, const std::string& path,
                             const std::string& body, const std::string& key = "k1") {
    HttpRequest r;
    r.method = method;
    r.path = path;
    r.body = body;
    if (!key.empty()) r.headers.emplace_back("authorization", "Bearer " + key);
    if (method == "POST") {
      r.headers.emplace_back("content-type", "application/json");
      r.headers.emplace_back("accept", "application/json, text/event-stream");
    }
    return r;
  }

  static std::string Header(const HttpResponse& r, const std::string& name) {
    for (const auto& [n, v] : r.headers) {
      if (n == name) return v;
    }
    return "";
  }

  // Opens a session; returns its id.
  std::string Open(const std::string& path = "/mcp", const std::string& key = "k1",
                   const std::string& version = "2025-11-25",
                   const std::string& workspace_header = "") {
    HttpRequest r = Request("POST", path,
                            json{{"jsonrpc", "2.0"},
                                 {"id", 0},
                                 {"method", "initialize"},
                                 {"params", {{"protocolVersion", version}}}}
                                .dump(),
                            key);
    if (!workspace_header.empty()) r.headers.emplace_back(kWorkspaceHeader, workspace_header);
    HttpResponse resp = app_.Handle(r);
    EXPECT_EQ(resp.status, 200) << resp.body;
    return Header(resp, "Mcp-Session-Id");
  }

  HttpResponse Send(const std::string& session, const json& body, const std::string& path = "/mcp",
                    const std::string& key = "k1") {
    HttpRequest r = Request("POST", path, body.dump(), key);
    if (!session.empty()) r.headers.emplace_back("mcp-session-id", session);
    r.on_io_thread = on_io_thread_;
    return app_.Handle(r);
  }

  static json Echo(int id, const std::string& text = "hi") {
    return {{"jsonrpc", "2.0"},
            {"id", id},
            {"method", "tools/call"},
            {"params", {{"name", "echo"}, {"arguments", {{"text", text}}}}}};
  }

  // A POST of the stateless revision: `body` gets the envelope in params._meta and the request
  // the headers mirroring it (those in `skip` left out).
  HttpResponse Stateless(json body, const std::string& path = "/mcp", const std::string& key = "k1",
                         const std::vector<std::string>& skip = {}) {
    body["params"]["_meta"] = {{"io.modelcontextprotocol/protocolVersion", "2026-07-28"},
                               {"io.modelcontextprotocol/clientCapabilities", json::object()}};
    HttpRequest r = Request("POST", path, body.dump(), key);
    auto add = [&](const std::string& name, const std::string& value) {
      if (std::find(skip.begin(), skip.end(), name) == skip.end()) {
        r.headers.emplace_back(name, value);
      }
    };
    add("mcp-protocol-version", "2026-07-28");
    if (body.contains("method")) add("mcp-method", body["method"].get<std::string>());
    if (body["params"].contains("name")) add("mcp-name", body["params"]["name"].get<std::string>());
    r.on_io_thread = on_io_thread_;
    return app_.Handle(r);
  }

  ToolRegistry tools_;
  bool on_io_thread_ = false;  // what the transport says of the thread Send runs on
  Protocol protocol_;
  ApiKeyAuth auth_;
  Metrics metrics_;
  HttpEndpoint endpoint_;
  App app_;
};

TEST_F(HttpEndpointTest, KeysAndWorkspacesAreCheckedFromTheHead) {
  EXPECT_EQ(app_.CheckBeforeBody(Request("POST", "/mcp", "", ""))->status, 401);
  EXPECT_EQ(app_.CheckBeforeBody(Request("POST", "/mcp", "", "wrong"))->status, 401);
  EXPECT_EQ(app_.CheckBeforeBody(Request("POST", "/mcp", "", "k2"))->status, 403);  // default
  EXPECT_EQ(app_.CheckBeforeBody(Request("POST", "/v1/agentic-memory/mcp", "", "k2"))->status, 403);
  EXPECT_FALSE(app_.CheckBeforeBody(Request("POST", "/mcp/workspaces/ws2", "", "k2")));
  HttpRequest by_header = Request("POST", "/mcp", "", "k2");
  by_header.headers.emplace_back(kWorkspaceHeader, "ws2");
  EXPECT_FALSE(app_.CheckBeforeBody(by_header));
  HttpRequest other = Request("POST", "/mcp", "", "k2");
  other.headers.emplace_back(kWorkspaceHeader, "ws3");
  EXPECT_EQ(app_.CheckBeforeBody(other)->status, 403);
  HttpRequest malformed = Request("POST", "/mcp", "", "k1");
  malformed.headers.emplace_back(kWorkspaceHeader, "no/slash");
  EXPECT_EQ(app_.CheckBeforeBody(malformed)->status, 400);
  EXPECT_FALSE(app_.CheckBeforeBody(Request("POST", "/mcp", "", "k1")));
}

TEST_F(HttpEndpointTest, ASessionRunsInItsWorkspace) {
  const std::string id = Open("/mcp", "k2", "2025-11-25", "ws2");
  ASSERT_FALSE(id.empty());
  HttpRequest note =
      Request("POST", "/mcp", R"({"jsonrpc":"2.0","method":"notifications/initialized"})", "k2");
  note.headers.emplace_back("mcp-session-id", id);
  note.headers.emplace_back(kWorkspaceHeader, "ws2");
  EXPECT_EQ(app_.Handle(note).status, 202);
  HttpRequest call = Request("POST", "/mcp", Echo(1).dump(), "k2");
  call.headers.emplace_back("mcp-session-id", id);
  call.headers.emplace_back(kWorkspaceHeader, "ws2");
  call.headers.emplace_back("mcp-protocol-version", "2025-11-25");
  HttpResponse r = app_.Handle(call);
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(json::parse(r.body)["result"]["structuredContent"]["workspace"], "ws2");
  // The same id in another workspace, or with another key, is an unknown session.
  EXPECT_EQ(Send(id, Echo(2), "/mcp/workspaces/other").status, 404);
  EXPECT_EQ(Send(id, Echo(2), "/mcp/workspaces/ws2", "k1").status, 404);
}

TEST_F(HttpEndpointTest, SessionsEndWithDelete) {
  const std::string id = Open();
  EXPECT_EQ(Send(id, Echo(1)).status, 200);
  HttpRequest del = Request("DELETE", "/mcp", "");
  del.headers.emplace_back("mcp-session-id", id);
  EXPECT_EQ(app_.Handle(del).status, 204);
  EXPECT_EQ(app_.Handle(del).status, 404);
  HttpResponse gone = Send(id, Echo(2));
  EXPECT_EQ(gone.status, 404);
  EXPECT_EQ(json::parse(gone.body)["error"]["code"], kSessionNotFound);
  EXPECT_EQ(app_.Handle(Request("DELETE", "/mcp", "")).status, 400);
}

TEST_F(HttpEndpointTest, RefusesBadHeaders) {
  const std::string id = Open();
  EXPECT_EQ(Send("", Echo(1)).status, 400);  // no session
  HttpRequest version = Request("POST", "/mcp", Echo(1).dump());
  version.headers.emplace_back("mcp-session-id", id);
  version.headers.emplace_back("mcp-protocol-version", "1999-01-01");
  EXPECT_EQ(app_.Handle(version).status, 400);
  HttpRequest mismatch = Request("POST", "/mcp", Echo(1).dump());
  mismatch.headers.emplace_back("mcp-session-id", id);
  mismatch.headers.emplace_back("mcp-protocol-version", "2025-06-18");
  EXPECT_EQ(app_.Handle(mismatch).status, 400);
  HttpRequest type = Request("POST", "/mcp", Echo(1).dump());
  type.headers[1].second = "text/plain";
  EXPECT_EQ(app_.Handle(type).status, 415);
  HttpRequest accept = Request("POST", "/mcp", Echo(1).dump());
  accept.headers[2].second = "text/event-stream";
  EXPECT_EQ(app_.Handle(accept).status, 406);
  HttpResponse get = app_.Handle(Request("GET", "/mcp", ""));
  EXPECT_EQ(get.status, 405);
  EXPECT_EQ(Header(get, "Allow"), "POST, DELETE");
}

TEST_F(HttpEndpointTest, MalformedBodiesAreJsonRpcErrors) {
  const std::string id = Open();
  auto send_raw = [&](const std::string& body) {
    HttpRequest r = Request("POST", "/mcp", body);
    r.headers.emplace_back("mcp-session-id", id);
    return app_.Handle(r);
  };
  HttpResponse parse = send_raw("{\"jsonrpc\":");
  EXPECT_EQ(parse.status, 400);
  EXPECT_EQ(json::parse(parse.body)["error"]["code"], kParseError);
  EXPECT_EQ(json::parse(send_raw("42").body)["error"]["code"], kInvalidRequest);
  EXPECT_EQ(
      json::parse(send_raw(R"({"jsonrpc":"2.0","id":1,"method":"nope"})").body)["error"]["code"],
      kMethodNotFound);
  // Batches belong to 2025-03-26 only.
  HttpResponse batch = send_raw("[" + Echo(1).dump() + "]");
  EXPECT_EQ(batch.status, 400);
  EXPECT_EQ(json::parse(batch.body)["error"]["code"], kInvalidRequest);
  // A second initialize inside a session is refused.
  EXPECT_EQ(
      send_raw(
          R"({"jsonrpc":"2.0","id":9,"method":"initialize","params":{"protocolVersion":"2025-11-25"}})")
          .status,
      400);
}

TEST_F(HttpEndpointTest, OnAnIoThreadReadsRunAndWritesMoveToAWorker) {
  const std::string id = Open();
  on_io_thread_ = true;
  EXPECT_EQ(Send(id, Echo(1)).status, 200);  // read-only: answered here
  HttpResponse write = Send(
      id,
      {{"jsonrpc", "2.0"}, {"id", 2}, {"method", "tools/call"}, {"params", {{"name", "boom"}}}});
  EXPECT_TRUE(write.run_on_worker);  // nothing ran: the transport hands it to a worker
  EXPECT_TRUE(write.body.empty());
}

TEST_F(HttpEndpointTest, OnAnIoThreadAReadOfWhatIsNotLoadedMovesToAWorker) {
  const std::string id = Open();
  auto shelf = [](int id, bool loaded) {
    return json{{"jsonrpc", "2.0"},
                {"id", id},
                {"method", "tools/call"},
                {"params", {{"name", "shelf"}, {"arguments", {{"loaded", loaded}}}}}};
  };
  on_io_thread_ = true;
  EXPECT_EQ(Send(id, shelf(1, true)).status, 200);  // loaded: answered here
  HttpResponse cold = Send(id, shelf(2, false));
  EXPECT_TRUE(cold.run_on_worker);  // the probe said it would load
  EXPECT_TRUE(cold.body.empty());
  // On the worker the same call runs.
  on_io_thread_ = false;
  EXPECT_EQ(Send(id, shelf(3, false)).status, 200);
}

TEST_F(HttpEndpointTest, StatelessRequestsNeedNoSession) {
  HttpResponse discover = Stateless({{"jsonrpc", "2.0"}, {"id", 1}, {"method", "server/discover"}});
  ASSERT_EQ(discover.status, 200) << discover.body;
  EXPECT_EQ(json::parse(discover.body)["result"]["supportedVersions"][0], "2026-07-28");
  EXPECT_EQ(Header(discover, "Mcp-Session-Id"), "");
  HttpResponse call = Stateless(Echo(2), "/mcp/workspaces/ws2", "k2");
  ASSERT_EQ(call.status, 200) << call.body;
  json result = json::parse(call.body)["result"];
  EXPECT_EQ(result["structuredContent"]["workspace"], "ws2");
  EXPECT_EQ(result["resultType"], "complete");
  EXPECT_EQ(endpoint_.sessions().size(), 0u);  // nothing kept between requests
  // An unknown method is a 404 in this revision's transport; notifications are accepted.
  HttpResponse unknown = Stateless({{"jsonrpc", "2.0"}, {"id", 3}, {"method", "prompts/list"}});
  EXPECT_EQ(unknown.status, 404);
  EXPECT_EQ(json::parse(unknown.body)["error"]["code"], kMethodNotFound);
  EXPECT_EQ(Stateless({{"jsonrpc", "2.0"}, {"method", "notifications/cancelled"}}).status, 202);
  // A session-based client is unaffected on the same endpoint.
  const std::string id = Open();
  EXPECT_EQ(Send(id, Echo(4)).status, 200);
}

TEST_F(HttpEndpointTest, StatelessRequestsAreCheckedAgainstTheirHeaders) {
  HttpResponse no_name = Stateless(Echo(1), "/mcp", "k1", {"mcp-name"});
  EXPECT_EQ(no_name.status, 400);
  json error = json::parse(no_name.body)["error"];
  EXPECT_EQ(error["code"], -32020);
  EXPECT_EQ(json::parse(no_name.body)["id"], 1);  // answered to the request
  EXPECT_EQ(Stateless(Echo(1), "/mcp", "k1", {"mcp-method"}).status, 400);
  EXPECT_EQ(Stateless(Echo(1), "/mcp", "k1", {"mcp-protocol-version"}).status, 400);

  json future = Echo(2);
  future["params"]["_meta"] = {{"io.modelcontextprotocol/protocolVersion", "2027-01-01"},
                               {"io.modelcontextprotocol/clientCapabilities", json::object()}};
  HttpRequest r = Request("POST", "/mcp", future.dump());
  r.headers.emplace_back("mcp-protocol-version", "2027-01-01");
  r.headers.emplace_back("mcp-method", "tools/call");
  r.headers.emplace_back("mcp-name", "echo");
  HttpResponse unsupported = app_.Handle(r);
  EXPECT_EQ(unsupported.status, 400);
  EXPECT_EQ(json::parse(unsupported.body)["error"]["code"], -32022);
  EXPECT_EQ(json::parse(unsupported.body)["error"]["data"]["supported"][0], "2026-07-28");

  // The header alone, without the envelope.
  HttpRequest bare = Request("POST", "/mcp", Echo(3).dump());
  bare.headers.emplace_back("mcp-protocol-version", "2026-07-28");
  HttpResponse missing = app_.Handle(bare);
  EXPECT_EQ(missing.status, 400);
  EXPECT_EQ(json::parse(missing.body)["error"]["code"], kInvalidParams);

  HttpResponse batch =
      Send("", json::array({json{{"jsonrpc", "2.0"},
                                 {"id", 4},
                                 {"method", "tools/list"},
                                 {"params", {{"_meta", future["params"]["_meta"]}}}}}));
  EXPECT_EQ(batch.status, 400);
  EXPECT_EQ(json::parse(batch.body)["error"]["code"], kInvalidRequest);

  // No session to end, no stream to open.
  HttpRequest del = Request("DELETE", "/mcp", "");
  del.headers.emplace_back("mcp-protocol-version", "2026-07-28");
  HttpResponse deleted = app_.Handle(del);
  EXPECT_EQ(deleted.status, 405);
  EXPECT_EQ(Header(deleted, "Allow"), "POST");
  HttpRequest get = Request("GET", "/mcp", "");
  get.headers.emplace_back("mcp-protocol-version", "2026-07-28");
  EXPECT_EQ(app_.Handle(get).status, 405);
}

TEST_F(HttpEndpointTest, OnAnIoThreadStatelessWritesMoveToAWorker) {
  on_io_thread_ = true;
  EXPECT_EQ(Stateless(Echo(1)).status, 200);  // a read runs where it is
  json write = {
      {"jsonrpc", "2.0"}, {"id", 2}, {"method", "tools/call"}, {"params", {{"name", "boom"}}}};
  EXPECT_TRUE(Stateless(write).run_on_worker);
}

TEST_F(HttpEndpointTest, BatchesIn20250326) {
  const std::string id = Open("/mcp", "k1", "2025-03-26");
  HttpResponse r =
      Send(id, json::array({Echo(1, "a"),
                            {{"jsonrpc", "2.0"}, {"method", "notifications/initialized"}},
                            Echo(2, "b"),
                            {{"jsonrpc", "2.0"}, {"id", 3}, {"method", "initialize"}}}));
  ASSERT_EQ(r.status, 200) << r.body;
  json answers = json::parse(r.body);
  ASSERT_EQ(answers.size(), 3u);
  EXPECT_EQ(answers[0]["id"], 1);
  EXPECT_EQ(answers[1]["id"], 2);
  EXPECT_EQ(answers[2]["error"]["code"], kInvalidRequest);  // initialize is never batched
  EXPECT_EQ(Send(id, json::array({{{"jsonrpc", "2.0"}, {"method", "notifications/x"}}})).status,
            202);
  EXPECT_EQ(Send(id, json::array()).status, 400);
}

TEST_F(HttpEndpointTest, ABatchHoldsABoundedNumberOfMessages) {
  const std::string id = Open("/mcp", "k1", "2025-03-26");
  const size_t limit = HttpEndpointOptions{}.max_batch_messages;
  json full = json::array();
  for (size_t i = 0; i < limit; ++i) full.push_back(Echo(static_cast<int>(i), "x"));
  HttpResponse ok = Send(id, full);
  ASSERT_EQ(ok.status, 200) << ok.body;
  EXPECT_EQ(json::parse(ok.body).size(), limit);
  full.push_back(Echo(static_cast<int>(limit), "x"));
  HttpResponse refused = Send(id, full);
  EXPECT_EQ(refused.status, 400);
  EXPECT_EQ(json::parse(refused.body)["error"]["code"], kInvalidRequest);
  EXPECT_NE(refused.body.find("at most"), std::string::npos) << refused.body;
}

}  // namespace
}  // namespace engram::mcp
