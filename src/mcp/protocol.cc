#include "mcp/protocol.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <chrono>

#include "mcp/stateless_request.h"

namespace engram::mcp {

namespace {
using json = nlohmann::json;
std::optional<json> Some(json j) { return std::optional<json>(std::move(j)); }
}  // namespace

const std::vector<std::string>& SupportedProtocolVersions() {
  static const std::vector<std::string> kVersions = {std::string(kLatestProtocolVersion),
                                                     "2025-06-18", "2025-03-26"};
  return kVersions;
}

bool IsSupportedProtocolVersion(std::string_view version) {
  const auto& v = SupportedProtocolVersions();
  return std::find(v.begin(), v.end(), version) != v.end();
}

Protocol::Protocol(const ToolRegistry* tools, ServerInfo info)
    : tools_(tools), info_(std::move(info)) {}

Protocol::Initialized Protocol::Initialize(const Message& request) const {
  const json& params = request.params;
  const auto requested = params.find("protocolVersion");
  if (requested == params.end() || !requested->is_string()) {
    return {ErrorResponse(request.id, kInvalidParams,
                          "Invalid params: initialize needs params.protocolVersion, a string"),
            ""};
  }
  for (const char* key : {"capabilities", "clientInfo"}) {
    if (auto it = params.find(key); it != params.end() && !it->is_object()) {
      return {ErrorResponse(request.id, kInvalidParams,
                            std::string("Invalid params: ") + key + " must be an object"),
              ""};
    }
  }
  const std::string& asked = requested->get_ref<const std::string&>();
  const std::string version =
      IsSupportedProtocolVersion(asked) ? asked : std::string(kLatestProtocolVersion);
  json server_info = {{"name", info_.name}, {"version", info_.version}};
  if (HasStructuredContent(version)) server_info["title"] = info_.title;
  json result = {{"protocolVersion", version},
                 {"capabilities", {{"tools", {{"listChanged", false}}}}},
                 {"serverInfo", std::move(server_info)}};
  if (!info_.instructions.empty()) result["instructions"] = info_.instructions;
  return {ResultResponse(request.id, std::move(result)), version};
}

bool Protocol::MayWait(const Message& message, const ToolContext& context) const {
  if (message.kind != MessageKind::kRequest || message.method != "tools/call") return false;
  const auto name = message.params.find("name");
  if (name == message.params.end() || !name->is_string()) return false;
  const Tool* tool = tools_->Find(name->get<std::string>());
  if (tool == nullptr) return false;  // answered at once with an error
  if (!tool->hints.read_only) return true;
  if (!tool->ready) return false;  // a read of nothing that loads (see Tool::ready)
  static const json kNoArguments = json::object();
  const auto arguments = message.params.find("arguments");
  const bool given = arguments != message.params.end() && arguments->is_object();
  return !tool->ready(given ? *arguments : kNoArguments, context);
}

std::optional<json> Protocol::Handle(const Message& message, const ToolContext& context) const {
  // Notifications (initialized, cancelled, ...) and responses need no answer; cancellation has
  // nothing to stop, as every call is answered on the request that made it.
  if (message.kind != MessageKind::kRequest) return std::optional<json>();
  const std::string& method = message.method;
  const bool stateless = IsStatelessProtocolVersion(context.protocol_version);
  if (method == "tools/list") {
    if (auto cursor = message.params.find("cursor");
        cursor != message.params.end() && !cursor->is_null()) {
      // The whole list fits one page: no cursor was ever handed out.
      return Some(ErrorResponse(message.id, kInvalidParams, "Invalid params: unknown cursor"));
    }
    json result = {{"tools", tools_->Describe(context.protocol_version)}};
    if (stateless) {
      // The same list for every key and workspace: shared caches may keep it.
      result["ttlMs"] = kToolListTtlMs;
      result["cacheScope"] = "public";
      result = StatelessResult(std::move(result));
    }
    return Some(ResultResponse(message.id, std::move(result)));
  }
  if (method == "tools/call") {
    json response = CallTool(message, context);
    if (stateless && response.contains("result")) {
      response["result"] = StatelessResult(std::move(response["result"]));
    }
    return Some(std::move(response));
  }
  if (stateless) {
    if (method == "server/discover") return Some(ResultResponse(message.id, Discover()));
  } else {
    if (method == "ping") return Some(ResultResponse(message.id, json::object()));
    if (method == "initialize") {
      return Some(ErrorResponse(message.id, kInvalidRequest,
                                "Invalid Request: the session is already initialized"));
    }
  }
  return Some(ErrorResponse(message.id, kMethodNotFound, "Method not found: " + method));
}

json Protocol::Discover() const {
  json result = {{"supportedVersions", StatelessProtocolVersions()},
                 {"capabilities", {{"tools", {{"listChanged", false}}}}},
                 {"ttlMs", kToolListTtlMs},
                 {"cacheScope", "public"}};
  if (!info_.instructions.empty()) result["instructions"] = info_.instructions;
  return StatelessResult(std::move(result));
}

json Protocol::StatelessResult(json result) const {
  result["resultType"] = "complete";
  result["_meta"] = {
      {kServerInfoKey, {{"name", info_.name}, {"title", info_.title}, {"version", info_.version}}}};
  return result;
}

json Protocol::CallTool(const Message& request, const ToolContext& context) const {
  const json& params = request.params;
  const auto name = params.find("name");
  if (name == params.end() || !name->is_string()) {
    return ErrorResponse(request.id, kInvalidParams,
                         "Invalid params: tools/call needs params.name, a string");
  }
  json arguments = json::object();
  if (auto a = params.find("arguments"); a != params.end() && !a->is_null()) {
    if (!a->is_object()) {
      return ErrorResponse(request.id, kInvalidParams,
                           "Invalid params: params.arguments must be an object");
    }
    arguments = *a;
  }
  const std::string& tool_name = name->get_ref<const std::string&>();
  const Tool* tool = tools_->Find(tool_name);
  if (tool == nullptr) {
    // Tool names are short, but a hostile one must not be echoed in bulk.
    return ErrorResponse(request.id, kInvalidParams, "Unknown tool: " + tool_name.substr(0, 128));
  }
  const auto start = std::chrono::steady_clock::now();
  auto result = tools_->Call(*tool, arguments, context);
  const double ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  spdlog::debug("mcp tool={} workspace={} ok={} ms={:.3f}", tool->name, context.workspace,
                result.ok() && !result->is_error, ms);
  if (!result.ok()) {
    return ErrorResponse(request.id, kInternalError, result.status().message());
  }
  return ResultResponse(request.id, RenderToolResult(*result, context.protocol_version));
}

}  // namespace engram::mcp
