#include "mcp/http_relay.h"

#include <curl/curl.h>
#include <spdlog/spdlog.h>

#include <mutex>

#include "common/ascii.h"
#include "common/json_reader.h"
#include "mcp/json_rpc.h"
#include "mcp/stateless_request.h"

namespace engram::mcp {

namespace {

using json = nlohmann::json;

struct Capture {
  std::string* body;
  size_t max;
  bool too_big = false;
};

size_t OnBody(char* data, size_t size, size_t n, void* user) {
  auto* c = static_cast<Capture*>(user);
  if (c->body->size() + size * n > c->max) {
    c->too_big = true;
    return 0;  // aborts the transfer
  }
  c->body->append(data, size * n);
  return size * n;
}

struct Headers {
  std::string session_id;
  std::string content_type;
};

size_t OnHeader(char* data, size_t size, size_t n, void* user) {
  auto* h = static_cast<Headers*>(user);
  std::string_view line(data, size * n);
  const size_t colon = line.find(':');
  if (colon != std::string_view::npos) {
    const std::string_view name = TrimAsciiSpace(line.substr(0, colon));
    const std::string_view value = TrimAsciiSpace(line.substr(colon + 1));
    if (EqualsIgnoreAsciiCase(name, "mcp-session-id")) h->session_id = std::string(value);
    if (EqualsIgnoreAsciiCase(name, "content-type")) h->content_type = std::string(value);
  }
  return size * n;
}

// The MCP endpoint for a --url: a bare server address gets /mcp (or /mcp/workspaces/{ws}).
std::string EndpointOf(const HttpRelayOptions& o) {
  std::string url = o.url;
  const size_t scheme = url.find("://");
  const size_t path = scheme == std::string::npos ? std::string::npos : url.find('/', scheme + 3);
  if (path != std::string::npos && url.substr(path) != "/") return url;
  while (!url.empty() && url.back() == '/') url.pop_back();
  return o.workspace.empty() ? url + "/mcp" : url + "/mcp/workspaces/" + o.workspace;
}

// A JSON-RPC error for the request `message` (a parsed line), or nothing for notifications.
std::vector<std::string> ErrorFor(const json& message, int code, const std::string& text) {
  if (!message.is_object() || !message.contains("id") || !message.contains("method")) return {};
  return {DumpJson(ErrorResponse(message["id"], code, text))};
}

// The standard headers of a stateless message, taken from its body (a message that lacks what a
// header mirrors gets no such header, and the server says what is wrong).
std::vector<std::string> StatelessHeaders(const json& message) {
  std::vector<std::string> headers;
  const json params = message.value("params", json::object());
  const json meta = params.is_object() ? params.value("_meta", json::object()) : json();
  if (meta.is_object()) {
    if (auto v = meta.find(kProtocolVersionKey); v != meta.end() && v->is_string()) {
      headers.push_back("MCP-Protocol-Version: " + EncodeHeaderValue(v->get<std::string>()));
    }
  }
  const json method = message.value("method", json());
  if (method.is_string()) {
    const std::string& m = method.get_ref<const std::string&>();
    headers.push_back("Mcp-Method: " + EncodeHeaderValue(m));
    const std::string_view field = NameField(m);
    if (!field.empty() && params.is_object()) {
      if (auto name = params.find(field); name != params.end() && name->is_string()) {
        headers.push_back("Mcp-Name: " + EncodeHeaderValue(name->get<std::string>()));
      }
    }
  }
  return headers;
}

}  // namespace

Result<std::unique_ptr<HttpRelay>> HttpRelay::Create(HttpRelayOptions options) {
  if (options.url.rfind("http://", 0) != 0 && options.url.rfind("https://", 0) != 0) {
    return Status::InvalidParameter("--url must start with http:// or https://");
  }
  static std::once_flag once;
  std::call_once(once, [] { curl_global_init(CURL_GLOBAL_DEFAULT); });
  std::unique_ptr<HttpRelay> relay(new HttpRelay(std::move(options)));
  if (relay->curl_ == nullptr) return Status::Internal("cannot initialise libcurl");
  return relay;
}

HttpRelay::HttpRelay(HttpRelayOptions options)
    : options_(std::move(options)), endpoint_(EndpointOf(options_)), curl_(curl_easy_init()) {}

HttpRelay::~HttpRelay() {
  EndSession();
  if (curl_ != nullptr) curl_easy_cleanup(static_cast<CURL*>(curl_));
}

HttpRelay::Reply HttpRelay::Send(const std::string& method, const std::string& body,
                                 const std::vector<std::string>& stateless_headers) {
  CURL* curl = static_cast<CURL*>(curl_);
  curl_easy_reset(curl);
  Reply reply;
  Capture capture{&reply.body, options_.max_response_bytes};
  Headers headers;
  curl_slist* list = nullptr;
  list = curl_slist_append(list, "Content-Type: application/json");
  list = curl_slist_append(list, "Accept: application/json, text/event-stream");
  if (!options_.api_key.empty()) {
    list = curl_slist_append(list, ("Authorization: Bearer " + options_.api_key).c_str());
  }
  if (!stateless_headers.empty()) {
    for (const std::string& h : stateless_headers) list = curl_slist_append(list, h.c_str());
  } else {
    if (!session_id_.empty()) {
      list = curl_slist_append(list, ("Mcp-Session-Id: " + session_id_).c_str());
    }
    if (!protocol_version_.empty()) {
      list = curl_slist_append(list, ("MCP-Protocol-Version: " + protocol_version_).c_str());
    }
  }
  curl_easy_setopt(curl, CURLOPT_URL, endpoint_.c_str());
  curl_easy_setopt(curl, CURLOPT_HTTPHEADER, list);
  curl_easy_setopt(curl, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(curl, CURLOPT_FOLLOWLOCATION, 0L);  // never carry the key elsewhere
  curl_easy_setopt(curl, CURLOPT_PROTOCOLS_STR, "http,https");
  curl_easy_setopt(curl, CURLOPT_CONNECTTIMEOUT_MS,
                   static_cast<long>(options_.connect_timeout.count()));
  curl_easy_setopt(curl, CURLOPT_TIMEOUT_MS, static_cast<long>(options_.request_timeout.count()));
  curl_easy_setopt(curl, CURLOPT_WRITEFUNCTION, OnBody);
  curl_easy_setopt(curl, CURLOPT_WRITEDATA, &capture);
  curl_easy_setopt(curl, CURLOPT_HEADERFUNCTION, OnHeader);
  curl_easy_setopt(curl, CURLOPT_HEADERDATA, &headers);
  if (method == "POST") {
    curl_easy_setopt(curl, CURLOPT_POST, 1L);
    curl_easy_setopt(curl, CURLOPT_POSTFIELDS, body.data());
    curl_easy_setopt(curl, CURLOPT_POSTFIELDSIZE_LARGE, static_cast<curl_off_t>(body.size()));
  } else {
    curl_easy_setopt(curl, CURLOPT_CUSTOMREQUEST, method.c_str());
  }
  const CURLcode rc = curl_easy_perform(curl);
  curl_slist_free_all(list);
  if (rc != CURLE_OK) {
    reply.error =
        capture.too_big ? "the answer is larger than the relay accepts" : curl_easy_strerror(rc);
    return reply;
  }
  curl_easy_getinfo(curl, CURLINFO_RESPONSE_CODE, &reply.status);
  reply.session_id = std::move(headers.session_id);
  reply.content_type = std::move(headers.content_type);
  return reply;
}

bool HttpRelay::Reopen() {
  if (initialize_line_.empty()) return false;
  session_id_.clear();
  protocol_version_.clear();
  Reply init = Send("POST", initialize_line_);
  if (init.status != 200 || init.session_id.empty()) return false;
  session_id_ = init.session_id;
  json answer = ReadJsonOrDiscarded(init.body, kServiceResponseLimits);
  if (answer.is_object() && answer.contains("result") && answer["result"].is_object()) {
    protocol_version_ = answer["result"].value("protocolVersion", "");
  }
  Send("POST", R"({"jsonrpc":"2.0","method":"notifications/initialized"})");
  spdlog::info("mcp relay: the server's session had ended; opened a new one");
  return true;
}

void HttpRelay::EndSession() {
  if (session_id_.empty()) return;
  Send("DELETE", "");
  session_id_.clear();
}

std::vector<std::string> HttpRelay::Handle(const std::string& line) {
  // Parsed only to learn what the message is (request or notification, initialize or not) and
  // to answer a bad line without a round trip; the line itself is what the server reads.
  json message;
  if (auto error = ParseBody(line, options_.max_response_bytes, &message)) {
    return {DumpJson(ErrorResponse(*error))};
  }
  // A message of the stateless revision goes on its own, with the headers that mirror its body.
  // (A batch claiming it goes as it is: the server refuses batches in that revision.)
  if (message.is_object() && IsStatelessTraffic(message, nullptr)) {
    return Answer(message, Send("POST", line, StatelessHeaders(message)));
  }
  const bool is_initialize = message.is_object() && message.value("method", json()) == "initialize";
  if (is_initialize) {
    // A new initialize starts over: the old session (if any) is ended first.
    EndSession();
    protocol_version_.clear();
  }
  Reply reply = Send("POST", line);
  if (reply.status == 404 && !session_id_.empty() && !is_initialize && Reopen()) {
    reply = Send("POST", line);
  }
  if (is_initialize && reply.status == 200) {
    session_id_ = reply.session_id;
    json answer = ReadJsonOrDiscarded(reply.body, kServiceResponseLimits);
    if (answer.is_object() && answer.contains("result") && answer["result"].is_object()) {
      protocol_version_ = answer["result"].value("protocolVersion", "");
      initialize_line_ = line;
    }
  }
  return Answer(message, reply);
}

std::vector<std::string> HttpRelay::Answer(const json& message, const Reply& reply) {
  if (reply.status == 0) {
    spdlog::error("mcp relay: cannot reach {}: {}", endpoint_, reply.error);
    return ErrorFor(message, kInternalError,
                    "cannot reach the engram server at " + endpoint_ + ": " + reply.error);
  }
  if (reply.status == 202) return {};
  json answer = ReadJsonOrDiscarded(reply.body, kServiceResponseLimits);
  const bool is_rpc = (answer.is_object() && answer.contains("jsonrpc")) || answer.is_array();
  if (is_rpc) {
    if (reply.status == 200) return {DumpJson(answer)};
    // The transport's refusals carry a null id: the client matches answers by id.
    const bool is_notification =
        message.is_object() && message.contains("method") && !message.contains("id");
    if (is_notification) {
      spdlog::warn("mcp relay: a notification was refused with HTTP {}", reply.status);
      return {};
    }
    if (answer.is_object() && answer.value("id", json()).is_null() && message.is_object()) {
      const json id = message.value("id", json());
      if (id.is_string() || id.is_number_integer()) answer["id"] = id;
    }
    return {DumpJson(answer)};
  }
  // A refusal: the server's own words, answered to the request that caused it.
  std::string text = "the engram server answered HTTP " + std::to_string(reply.status);
  if (answer.is_object()) {
    // The API's error envelope: {"code": "InvalidApiKey", "message": "..."}.
    if (answer.contains("code") && answer["code"].is_string()) {
      text += " " + answer["code"].get<std::string>();
    }
    if (answer.contains("message") && answer["message"].is_string()) {
      text += ": " + answer["message"].get<std::string>();
    }
  }
  spdlog::warn("mcp relay: {}", text);
  return ErrorFor(message, kTransportError, text);
}

}  // namespace engram::mcp
