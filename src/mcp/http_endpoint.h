// The Streamable HTTP transport of MCP: one endpoint that takes JSON-RPC messages by POST, for the
// stateless revision (2026-07-28) and the session-based ones (2025-11-25 and earlier) alike.
// Every answer is one JSON body (application/json); the server never opens an SSE stream, so GET
// is 405 as the transport allows.
//
// What a request passes before its message runs (the HTTP layer has already checked the API key
// for the request's workspace, see RegisterMcpRoutes):
//   1. Origin and Host: checked for every route by the API's RequestGuard (api/request_guard.h),
//      the transport's defence against pages in a browser and DNS rebinding of a local server.
//   2. POST: Content-Type application/json (else 415); an Accept header, when sent, must admit
//      application/json (else 406).
//   3. Without Mcp-Session-Id, the body is parsed (not JSON: -32700, HTTP 400) and a message of
//      the stateless revision is checked and answered on its own (stateless_request.h; an unknown
//      method is HTTP 404 with -32601, as that revision's transport says). DELETE without a
//      session under that revision is 405.
//   4. Otherwise the session-based rules: MCP-Protocol-Version, when sent, must be a supported
//      revision and the session's (else 400); Mcp-Session-Id is required on everything but
//      initialize (400 without it); unknown, expired, or opened with another key or workspace:
//      404 (checked before the body is read), and the client starts a new session.
// Not a JSON-RPC message → -32600 with HTTP 400. Notifications and responses are answered 202
// with no body; requests 200 with the JSON-RPC response (its errors included). Batches (JSON
// arrays) exist only in revision 2025-03-26 and are refused (-32600) in sessions of later
// revisions and without a session; initialize is never batched. A batch holds at most
// max_batch_messages messages (-32600 beyond), so that one request's work stays bounded: each
// message runs under the limits of its tool, one after another on one worker.
//
// Thread-safety: Post, Delete and Get are safe to call concurrently. Ownership: does not own the
// protocol engine; owns the session table.
#pragma once

#include <string>
#include <vector>

#include "mcp/protocol.h"
#include "mcp/session_table.h"
#include "server/http_types.h"

namespace engram::mcp {

struct HttpEndpointOptions {
  SessionTableOptions sessions;
  // Largest JSON-RPC message read (the HTTP body limit applies first).
  size_t max_message_bytes = 16 << 20;
  // Messages one batch may hold.
  size_t max_batch_messages = 64;
};

class HttpEndpoint {
 public:
  HttpEndpoint(const Protocol* protocol, HttpEndpointOptions options);

  // `workspace` is the one the route resolved and the key was checked for. On an I/O thread
  // (HttpRequest::on_io_thread: the POST routes are compute-bound, so reads run there like REST
  // searches) a body with a message that may wait (Protocol::MayWait: a write, or a read of
  // shards not loaded yet) is answered HttpResponse::RunOnWorker() before anything is done.
  HttpResponse Post(const HttpRequest& request, const std::string& workspace);
  HttpResponse Delete(const HttpRequest& request, const std::string& workspace);
  HttpResponse Get(const HttpRequest& request);

  SessionTable& sessions() { return sessions_; }

 private:
  // A refusal of the transport: `http_status` with a JSON-RPC error that has a null id.
  static HttpResponse Refuse(int http_status, int code, const std::string& message);
  // Runs one message of an established session; nullopt when it needs no answer.
  std::optional<nlohmann::json> Dispatch(const Message& message, const Session& session);
  HttpResponse Initialize(const HttpRequest& request, const Message& message,
                          const std::string& workspace);
  // A message of the stateless revision (stateless_request.h): no session, checked and run on
  // its own.
  HttpResponse PostStateless(const HttpRequest& request, const std::string& workspace,
                             const nlohmann::json& body);

  const Protocol* protocol_;
  HttpEndpointOptions options_;
  SessionTable sessions_;
};

// The key a request presents (Authorization: Bearer|Token, or X-Api-Key), "" when none: sessions
// are bound to its digest.
std::string PresentedCredential(const HttpRequest& request);

}  // namespace engram::mcp
