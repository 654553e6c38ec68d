#include "mcp/http_endpoint.h"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <spdlog/spdlog.h>

#include <algorithm>

#include "common/ascii.h"
#include "common/json_reader.h"
#include "mcp/stateless_request.h"

namespace engram::mcp {

namespace {

using json = nlohmann::json;

constexpr const char* kSessionHeader = "Mcp-Session-Id";

HttpResponse JsonBody(int status, const json& body) {
  HttpResponse r;
  r.status = status;
  r.body = DumpJson(body);
  return r;
}

HttpResponse Empty(int status) {
  HttpResponse r;
  r.status = status;
  r.content_type = "text/plain; charset=utf-8";
  return r;
}

// The media type of a header value without parameters, lower-cased: "application/json".
std::string MediaType(std::string_view value) {
  const size_t semi = value.find(';');
  return LowerAscii(TrimAsciiSpace(value.substr(0, semi)));
}

bool AcceptsJson(std::string_view accept) {
  size_t start = 0;
  while (start <= accept.size()) {
    size_t comma = accept.find(',', start);
    if (comma == std::string_view::npos) comma = accept.size();
    const std::string type = MediaType(accept.substr(start, comma - start));
    if (type == "application/json" || type == "application/*" || type == "*/*") return true;
    start = comma + 1;
  }
  return false;
}

}  // namespace

std::string PresentedCredential(const HttpRequest& request) {
  if (const std::string* h = request.Header("authorization")) {
    std::string_view v = TrimAsciiSpace(*h);
    for (std::string_view scheme : {"bearer ", "token "}) {
      if (v.size() > scheme.size() && EqualsIgnoreAsciiCase(v.substr(0, scheme.size()), scheme)) {
        return std::string(TrimAsciiSpace(v.substr(scheme.size())));
      }
    }
  }
  if (const std::string* h = request.Header("x-api-key")) {
    return std::string(TrimAsciiSpace(*h));
  }
  return "";
}

HttpEndpoint::HttpEndpoint(const Protocol* protocol, HttpEndpointOptions options)
    : protocol_(protocol), options_(std::move(options)), sessions_(options_.sessions) {}

HttpResponse HttpEndpoint::Refuse(int http_status, int code, const std::string& message) {
  return JsonBody(http_status, ErrorResponse(nullptr, code, message));
}

HttpResponse HttpEndpoint::Get(const HttpRequest& request) {
  const std::string* version = request.Header("mcp-protocol-version");
  const bool stateless = version != nullptr && IsStatelessEra(TrimAsciiSpace(*version));
  HttpResponse r = Refuse(405, kTransportError,
                          stateless ? "Method Not Allowed: POST messages"
                                    : "Method Not Allowed: this server sends no server-initiated "
                                      "SSE stream; POST messages, DELETE to end a session");
  r.headers.emplace_back("Allow", stateless ? "POST" : "POST, DELETE");
  return r;
}

HttpResponse HttpEndpoint::Delete(const HttpRequest& request, const std::string& workspace) {
  const std::string* id = request.Header("mcp-session-id");
  if (id == nullptr || id->empty()) {
    // The stateless revision has no session to end.
    if (const std::string* version = request.Header("mcp-protocol-version");
        version != nullptr && IsStatelessEra(TrimAsciiSpace(*version))) {
      HttpResponse r = Refuse(405, kTransportError,
                              "Method Not Allowed: revision " + version->substr(0, 64) +
                                  " has no sessions; POST messages");
      r.headers.emplace_back("Allow", "POST");
      return r;
    }
    return Refuse(400, kTransportError, "Bad Request: DELETE needs an Mcp-Session-Id header");
  }
  if (!sessions_.Remove(*id, workspace, CredentialDigest(PresentedCredential(request)))) {
    return Refuse(404, kSessionNotFound, "Session not found");
  }
  return Empty(204);  // ended: nothing to say
}

HttpResponse HttpEndpoint::Post(const HttpRequest& request, const std::string& workspace) {
  const std::string* content_type = request.Header("content-type");
  if (content_type == nullptr || MediaType(*content_type) != "application/json") {
    return Refuse(415, kTransportError,
                  "Unsupported Media Type: POST a JSON-RPC message as application/json");
  }
  if (const std::string* accept = request.Header("accept"); accept && !AcceptsJson(*accept)) {
    return Refuse(406, kTransportError,
                  "Not Acceptable: this server answers with application/json; list it (with "
                  "text/event-stream) in Accept");
  }
  const std::string* version_header = request.Header("mcp-protocol-version");
  const std::string* session_id = request.Header("mcp-session-id");
  const bool in_session = session_id != nullptr && !session_id->empty();
  json body;
  if (!in_session) {
    // Without a session the body says which revision the message is of.
    if (auto error = ParseBody(request.body, options_.max_message_bytes, &body)) {
      return JsonBody(400, ErrorResponse(*error));
    }
    if (IsStatelessTraffic(body, version_header)) return PostStateless(request, workspace, body);
  }
  if (version_header != nullptr && !IsSupportedProtocolVersion(*version_header)) {
    return Refuse(
        400, kTransportError,
        fmt::format("Bad Request: unsupported MCP-Protocol-Version {}; supported: {} "
                    "(without a session), {}",
                    version_header->substr(0, 64), fmt::join(StatelessProtocolVersions(), ", "),
                    fmt::join(SupportedProtocolVersions(), ", ")));
  }
  // The session is checked before the body is read: a client whose session ended learns that
  // (404, start again) whatever it sent.
  std::optional<Session> session;
  if (in_session) {
    session =
        sessions_.Find(*session_id, workspace, CredentialDigest(PresentedCredential(request)));
    if (!session) {
      return Refuse(404, kSessionNotFound,
                    "Session not found: it ended or expired; send a new initialize without "
                    "Mcp-Session-Id");
    }
    if (version_header != nullptr && *version_header != session->protocol_version) {
      return Refuse(400, kTransportError,
                    "Bad Request: MCP-Protocol-Version " + *version_header +
                        " is not the session's negotiated version " + session->protocol_version);
    }
    if (auto error = ParseBody(request.body, options_.max_message_bytes, &body)) {
      return JsonBody(400, ErrorResponse(*error));
    }
  }

  // A single initialize opens a session; everything else needs one.
  if (body.is_object() && body.value("method", json()) == "initialize") {
    Message message;
    if (auto error = ReadMessage(body, &message)) return JsonBody(400, ErrorResponse(*error));
    if (message.kind != MessageKind::kRequest) {
      return JsonBody(400,
                      ErrorResponse(nullptr, kInvalidRequest,
                                    "Invalid Request: initialize must be a request (with an id)"));
    }
    if (session) {
      return JsonBody(400, ErrorResponse(message.id, kInvalidRequest,
                                         "Invalid Request: initialize opens a new session; send "
                                         "it without an Mcp-Session-Id header"));
    }
    return Initialize(request, message, workspace);
  }
  if (!session) {
    return Refuse(400, kTransportError,
                  "Bad Request: Mcp-Session-Id header is required; send initialize first");
  }

  // Writes wait (fsync, an event to finish), and so do reads of shards not loaded yet: leave
  // them to a worker before anything is done.
  if (request.on_io_thread) {
    const ToolContext context{session->workspace, session->protocol_version};
    for (const json& item : body.is_array() ? body : json::array({body})) {
      Message message;
      if (!ReadMessage(item, &message) && protocol_->MayWait(message, context)) {
        return HttpResponse::RunOnWorker();
      }
    }
  }

  if (body.is_array()) {
    if (session->protocol_version != "2025-03-26") {
      return JsonBody(400, ErrorResponse(nullptr, kInvalidRequest,
                                         "Invalid Request: JSON-RPC batches are not supported in "
                                         "protocol revision " +
                                             session->protocol_version));
    }
    if (body.empty()) {
      return JsonBody(400, ErrorResponse(nullptr, kInvalidRequest, "Invalid Request: empty batch"));
    }
    if (body.size() > options_.max_batch_messages) {
      return JsonBody(400,
                      ErrorResponse(nullptr, kInvalidRequest,
                                    "Invalid Request: a batch holds at most " +
                                        std::to_string(options_.max_batch_messages) +
                                        " messages; this one has " + std::to_string(body.size())));
    }
    json responses = json::array();
    for (const json& item : body) {
      Message message;
      if (auto error = ReadMessage(item, &message)) {
        responses.push_back(ErrorResponse(*error));
        continue;
      }
      if (message.method == "initialize") {
        if (message.kind == MessageKind::kRequest) {
          responses.push_back(ErrorResponse(message.id, kInvalidRequest,
                                            "Invalid Request: initialize must not be batched"));
        }
        continue;
      }
      auto response = Dispatch(message, *session);
      if (response) responses.push_back(std::move(*response));
    }
    if (responses.empty()) return Empty(202);
    return JsonBody(200, responses);
  }

  Message message;
  if (auto error = ReadMessage(body, &message)) return JsonBody(400, ErrorResponse(*error));
  auto response = Dispatch(message, *session);
  if (!response) return Empty(202);
  return JsonBody(200, *response);
}

HttpResponse HttpEndpoint::PostStateless(const HttpRequest& request, const std::string& workspace,
                                         const json& body) {
  if (body.is_array()) {
    return JsonBody(400, ErrorResponse(nullptr, kInvalidRequest,
                                       "Invalid Request: JSON-RPC batches do not exist in "
                                       "protocol revision 2026-07-28; send one message per POST"));
  }
  Message message;
  if (auto error = ReadMessage(body, &message)) return JsonBody(400, ErrorResponse(*error));
  std::string version;
  const StandardHeaders headers{.protocol_version = request.Header("mcp-protocol-version"),
                                .method = request.Header("mcp-method"),
                                .name = request.Header("mcp-name")};
  if (auto refusal = CheckStatelessMessage(message, headers, &version)) {
    const json id = message.kind == MessageKind::kRequest ? message.id : json();
    return JsonBody(refusal->http_status,
                    ErrorResponse(id, refusal->code, refusal->message, refusal->data));
  }
  if (message.kind != MessageKind::kRequest) return Empty(202);
  const ToolContext context{workspace, version};
  if (request.on_io_thread && protocol_->MayWait(message, context)) {
    return HttpResponse::RunOnWorker();
  }
  json response = *protocol_->Handle(message, context);
  // The transport's answer to a method the server does not have.
  const bool unknown = response.contains("error") && response["error"]["code"] == kMethodNotFound;
  return JsonBody(unknown ? 404 : 200, response);
}

HttpResponse HttpEndpoint::Initialize(const HttpRequest& request, const Message& message,
                                      const std::string& workspace) {
  Protocol::Initialized init = protocol_->Initialize(message);
  if (init.protocol_version.empty()) return JsonBody(200, init.response);
  auto session = sessions_.Create(workspace, CredentialDigest(PresentedCredential(request)),
                                  request.remote_ip, init.protocol_version);
  if (!session.ok()) {
    HttpResponse r =
        JsonBody(503, ErrorResponse(message.id, kInternalError, session.status().message()));
    r.headers.emplace_back("Retry-After", "5");
    return r;
  }
  spdlog::debug("mcp session opened workspace={} version={}", workspace, init.protocol_version);
  HttpResponse r = JsonBody(200, init.response);
  r.headers.emplace_back(kSessionHeader, session->id);
  return r;
}

std::optional<json> HttpEndpoint::Dispatch(const Message& message, const Session& session) {
  if (message.kind == MessageKind::kNotification && message.method == "notifications/initialized") {
    sessions_.MarkInitialized(session.id);
  }
  return protocol_->Handle(message, ToolContext{session.workspace, session.protocol_version});
}

}  // namespace engram::mcp
