#include "mcp/json_rpc.h"

#include "common/json_reader.h"

namespace engram::mcp {

namespace {

using json = nlohmann::json;

bool ValidId(const json& id) { return id.is_string() || id.is_number_integer(); }

}  // namespace

std::optional<RpcError> ReadMessage(const json& value, Message* out) {
  if (!value.is_object()) {
    return RpcError{kInvalidRequest, "Invalid Request: a JSON-RPC message must be an object",
                    nullptr};
  }
  // The id is read first, so that every later refusal can be answered to the request it names.
  json id = nullptr;
  const auto id_it = value.find("id");
  const bool has_id = id_it != value.end();
  if (has_id && ValidId(*id_it)) id = *id_it;
  const auto version = value.find("jsonrpc");
  if (version == value.end() || !version->is_string() ||
      version->get_ref<const std::string&>() != "2.0") {
    return RpcError{kInvalidRequest, "Invalid Request: jsonrpc must be \"2.0\"", id};
  }
  if (has_id && !ValidId(*id_it)) {
    return RpcError{kInvalidRequest, "Invalid Request: id must be a string or an integer", nullptr};
  }
  const auto method = value.find("method");
  if (method == value.end()) {
    // A response to a request of ours (the server sends none, so it is only acknowledged).
    const bool has_result = value.contains("result");
    const bool has_error = value.contains("error");
    if (!has_id || has_result == has_error) {
      return RpcError{kInvalidRequest,
                      "Invalid Request: a message needs a method (request or notification), or an "
                      "id with exactly one of result and error (response)",
                      id};
    }
    out->kind = MessageKind::kResponse;
    out->id = std::move(id);
    out->method.clear();
    out->params = json::object();
    return std::nullopt;
  }
  if (!method->is_string() || method->get_ref<const std::string&>().empty()) {
    return RpcError{kInvalidRequest, "Invalid Request: method must be a non-empty string", id};
  }
  json params = json::object();
  if (const auto p = value.find("params"); p != value.end()) {
    if (!p->is_object()) {
      return RpcError{has_id ? kInvalidParams : kInvalidRequest,
                      "Invalid params: params must be an object", id};
    }
    params = *p;
  }
  out->kind = has_id ? MessageKind::kRequest : MessageKind::kNotification;
  out->id = std::move(id);
  out->method = method->get<std::string>();
  out->params = std::move(params);
  return std::nullopt;
}

std::optional<RpcError> ParseBody(std::string_view body, size_t max_bytes, json* out) {
  auto parsed = ReadJson(body, JsonReadLimits{.what = "message",
                                              .max_bytes = max_bytes,
                                              .max_depth = 64,
                                              .refuse_duplicate_keys = true,
                                              .refuse_nul = true});
  if (!parsed.ok()) {
    return RpcError{kParseError, "Parse error: " + parsed.status().message(), nullptr};
  }
  *out = std::move(*parsed);
  return std::nullopt;
}

json ResultResponse(const json& id, json result) {
  return json{{"jsonrpc", "2.0"}, {"id", id}, {"result", std::move(result)}};
}

json ErrorResponse(const json& id, int code, std::string_view message, const json& data) {
  json error = {{"code", code}, {"message", message}};
  if (!data.is_null()) error["data"] = data;
  return json{{"jsonrpc", "2.0"}, {"id", id}, {"error", std::move(error)}};
}

}  // namespace engram::mcp
