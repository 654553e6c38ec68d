// HttpRelay: the stdio side of `engram mcp`. Each message read from stdin is POSTed to a running
// `engram serve`'s MCP endpoint, and its answer becomes the line written back.
//
// Why a relay and not a second server over the data directory: one process owns the SQLite
// database (its writer, journal and in-memory indexes assume so), and the stdio process needs no
// model, no indexes and no start-up time; every check (API key, workspace limits, validation)
// stays in one place, the server.
//
// A message of the stateless revision (2026-07-28, stateless_request.h) is sent on its own, with
// the MCP-Protocol-Version, Mcp-Method and Mcp-Name headers its body implies and no session.
// For the session-based revisions the relay keeps the server's Mcp-Session-Id and negotiated
// MCP-Protocol-Version and sends them with every later message. If the server answers 404 (the
// session expired, or the server restarted), the relay opens a new session by replaying the
// client's initialize and notifications/initialized, then sends the message again, so a long-lived
// host never notices. HTTP refusals that carry no JSON-RPC answer (401, 403, a server that cannot
// be reached) become JSON-RPC errors for the request's id; notifications get no answer, as stdio
// has none to give.
//
// Thread-safety: not thread-safe; one relay serves one stdio loop. Ownership: owns its libcurl
// handle.
#pragma once

#include <chrono>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "common/status.h"

namespace engram::mcp {

struct HttpRelayOptions {
  // The server, e.g. "http://127.0.0.1:8080" (the relay adds /mcp), or a full MCP endpoint URL
  // whose path is kept as given.
  std::string url = "http://127.0.0.1:8080";
  std::string api_key;    // sent as Authorization: Bearer
  std::string workspace;  // empty: the endpoint's default ("default")
  std::chrono::milliseconds connect_timeout{3000};
  // Per message; memory_store waits for its event on the server, so this is generous.
  std::chrono::milliseconds request_timeout{120000};
  size_t max_response_bytes = 64 << 20;
};

class HttpRelay {
 public:
  static Result<std::unique_ptr<HttpRelay>> Create(HttpRelayOptions options);
  ~HttpRelay();  // ends the server-side session (DELETE)
  HttpRelay(const HttpRelay&) = delete;
  HttpRelay& operator=(const HttpRelay&) = delete;

  // The lines to write for one received message line.
  std::vector<std::string> Handle(const std::string& line);

  // The MCP endpoint messages go to.
  const std::string& endpoint() const { return endpoint_; }

 private:
  struct Reply {
    long status = 0;  // 0: no HTTP answer (transport error in `error`)
    std::string body;
    std::string content_type;
    std::string session_id;
    std::string error;
  };
  explicit HttpRelay(HttpRelayOptions options);
  // `stateless_headers` non-empty: a message of the stateless revision, sent with those headers
  // and without the session's.
  Reply Send(const std::string& method, const std::string& body,
             const std::vector<std::string>& stateless_headers = {});
  // The lines to write for the server's reply to `message`.
  std::vector<std::string> Answer(const nlohmann::json& message, const Reply& reply);
  // Replays the client's initialize to open a new session; false if it failed.
  bool Reopen();
  void EndSession();

  HttpRelayOptions options_;
  std::string endpoint_;
  void* curl_ = nullptr;  // CURL*
  std::string session_id_;
  std::string protocol_version_;
  std::string initialize_line_;  // the client's initialize, replayed by Reopen
};

}  // namespace engram::mcp
