#include "mcp/stateless_request.h"

#include <algorithm>

#include "common/ascii.h"
#include "common/codec.h"
#include "common/utf8.h"

namespace engram::mcp {

namespace {

using json = nlohmann::json;

constexpr std::string_view kBase64Prefix = "=?base64?";
constexpr std::string_view kBase64Suffix = "?=";
// Header values and body fields are quoted in messages; a hostile one is not echoed in bulk.
constexpr size_t kQuoted = 128;

std::string Quote(std::string_view s) { return std::string(s.substr(0, kQuoted)); }

const json* MetaOf(const json& params) {
  if (!params.is_object()) return nullptr;
  auto it = params.find("_meta");
  return it != params.end() && it->is_object() ? &*it : nullptr;
}

bool HasClaim(const json& params) {
  const json* meta = MetaOf(params);
  return meta != nullptr && meta->contains(kProtocolVersionKey);
}

StatelessRefusal Mismatch(std::string header, std::string body, std::string message) {
  return StatelessRefusal{
      .http_status = 400,
      .code = kHeaderMismatch,
      .message = "Bad Request: the request headers and body disagree: " + std::move(message),
      .data = {{"mismatch", {{"header", std::move(header)}, {"body", std::move(body)}}}}};
}

StatelessRefusal BadEnvelope(std::string_view key, std::string_view problem) {
  return StatelessRefusal{.http_status = 400,
                          .code = kInvalidParams,
                          .message = "Invalid _meta envelope for protocol revision 2026-07-28: " +
                                     std::string(key) + ": " + std::string(problem),
                          .data = {{"envelope", {{"key", key}, {"problem", problem}}}}};
}

// The first problem of a request's envelope, or nullopt.
std::optional<StatelessRefusal> CheckEnvelope(const json& meta) {
  for (std::string_view key : {kProtocolVersionKey, kClientCapabilitiesKey}) {
    if (!meta.contains(key)) return BadEnvelope(key, "missing");
  }
  if (!meta.at(kProtocolVersionKey).is_string()) {
    return BadEnvelope(kProtocolVersionKey, "expected a protocol version string");
  }
  if (!meta.at(kClientCapabilitiesKey).is_object()) {
    return BadEnvelope(kClientCapabilitiesKey, "expected an object");
  }
  if (auto info = meta.find(kClientInfoKey); info != meta.end()) {
    if (!info->is_object()) return BadEnvelope(kClientInfoKey, "expected an object");
    for (const char* field : {"name", "version"}) {
      auto f = info->find(field);
      if (f == info->end() || !f->is_string()) {
        return BadEnvelope(kClientInfoKey, std::string(field) + " must be a string");
      }
    }
  }
  return std::nullopt;
}

std::string Trimmed(const std::string* header) {
  return header == nullptr ? std::string() : std::string(TrimAsciiSpace(*header));
}

}  // namespace

const std::vector<std::string>& StatelessProtocolVersions() {
  static const std::vector<std::string> kVersions = {"2026-07-28"};
  return kVersions;
}

bool IsStatelessProtocolVersion(std::string_view version) {
  const auto& v = StatelessProtocolVersions();
  return std::find(v.begin(), v.end(), version) != v.end();
}

bool IsStatelessEra(std::string_view version) {
  // Revisions are dates, YYYY-MM-DD: later ones sort later.
  if (version.size() != 10 || version[4] != '-' || version[7] != '-') return false;
  for (size_t i : {0, 1, 2, 3, 5, 6, 8, 9}) {
    if (version[i] < '0' || version[i] > '9') return false;
  }
  return version >= "2026-07-28";
}

bool IsStatelessTraffic(const json& body, const std::string* version_header) {
  if (body.is_array()) {
    return std::any_of(body.begin(), body.end(), [](const json& m) {
      return m.is_object() && HasClaim(m.value("params", json()));
    });
  }
  if (!body.is_object() || !body.contains("method")) return false;  // responses are not
  if (HasClaim(body.value("params", json()))) return true;
  return version_header != nullptr && IsStatelessEra(TrimAsciiSpace(*version_header));
}

std::string_view NameField(std::string_view method) {
  if (method == "tools/call" || method == "prompts/get") return "name";
  if (method == "resources/read") return "uri";
  return "";
}

std::optional<StatelessRefusal> CheckStatelessMessage(const Message& message,
                                                      const StandardHeaders& headers,
                                                      std::string* version) {
  const bool request = message.kind == MessageKind::kRequest;
  const std::string header_version = Trimmed(headers.protocol_version);
  const std::string header_method = Trimmed(headers.method);
  const json* meta = MetaOf(message.params);
  if (meta == nullptr || !meta->contains(kProtocolVersionKey)) {
    // Only a stateless MCP-Protocol-Version header brought the message here.
    if (message.method == "initialize") {
      return Mismatch(header_version, "initialize",
                      "an initialize request (the session-based handshake) was sent with "
                      "MCP-Protocol-Version " +
                          Quote(header_version));
    }
    return StatelessRefusal{
        .http_status = 400,
        .code = kInvalidParams,
        .message = "Invalid params: the MCP-Protocol-Version header names revision " +
                   Quote(header_version) + ", but params._meta does not carry " +
                   std::string(kProtocolVersionKey) + " and " + std::string(kClientCapabilitiesKey),
        .data = {{"envelope",
                  {{"missing", json::array({kProtocolVersionKey, kClientCapabilitiesKey})}}}}};
  }
  // Notifications need only the version; requests the whole envelope.
  if (request) {
    if (auto bad = CheckEnvelope(*meta)) return bad;
  } else if (!meta->at(kProtocolVersionKey).is_string()) {
    return BadEnvelope(kProtocolVersionKey, "expected a protocol version string");
  }
  const std::string& claimed = meta->at(kProtocolVersionKey).get_ref<const std::string&>();
  if (headers.protocol_version != nullptr && header_version != claimed) {
    return Mismatch(header_version, claimed,
                    "params._meta names protocol version " + Quote(claimed) +
                        " but the MCP-Protocol-Version header names " + Quote(header_version));
  }
  if (headers.method != nullptr && header_method != message.method) {
    return Mismatch(header_method, message.method,
                    "the body names method " + Quote(message.method) +
                        " but the Mcp-Method header names " + Quote(header_method));
  }
  if (!IsStatelessProtocolVersion(claimed)) {
    return StatelessRefusal{
        .http_status = 400,
        .code = kUnsupportedProtocolVersion,
        .message = "Unsupported protocol version: " + Quote(claimed),
        .data = {{"supported", StatelessProtocolVersions()}, {"requested", claimed}}};
  }
  if (request) {
    if (headers.protocol_version == nullptr) {
      return Mismatch("(missing)", claimed,
                      "params._meta names protocol version " + Quote(claimed) +
                          " but the required MCP-Protocol-Version header is absent");
    }
    if (headers.method == nullptr) {
      return Mismatch("(missing)", message.method,
                      "the body names method " + Quote(message.method) +
                          " but the required Mcp-Method header is absent");
    }
    const std::string_view field = NameField(message.method);
    if (!field.empty()) {
      auto it = message.params.find(field);
      const bool named = it != message.params.end() && it->is_string();
      const std::string body_name = named ? it->get<std::string>() : std::string();
      if (headers.name == nullptr) {
        if (named) {
          return Mismatch("(missing)", body_name,
                          "the body carries params." + std::string(field) + " \"" +
                              Quote(body_name) + "\" but the required Mcp-Name header is absent");
        }
      } else {
        const std::string header_name = Trimmed(headers.name);
        auto decoded = DecodeHeaderValue(header_name);
        if (!decoded) {
          return Mismatch(header_name, body_name,
                          "the Mcp-Name header carries an invalid base64 value");
        }
        if (named && *decoded != body_name) {
          return Mismatch(header_name, body_name,
                          "the body carries params." + std::string(field) + " \"" +
                              Quote(body_name) + "\" but the Mcp-Name header names \"" +
                              Quote(*decoded) + "\"");
        }
      }
    }
  }
  *version = claimed;
  return std::nullopt;
}

std::string EncodeHeaderValue(std::string_view value) {
  const bool plain =
      !value.empty() && value.front() != ' ' && value.back() != ' ' &&
      std::all_of(value.begin(), value.end(), [](char c) { return c >= 0x20 && c < 0x7f; }) &&
      !(value.substr(0, kBase64Prefix.size()) == kBase64Prefix);
  if (plain) return std::string(value);
  return std::string(kBase64Prefix) + Base64Encode(value) + std::string(kBase64Suffix);
}

std::optional<std::string> DecodeHeaderValue(std::string_view value) {
  if (value.size() < kBase64Prefix.size() + kBase64Suffix.size() ||
      value.substr(0, kBase64Prefix.size()) != kBase64Prefix ||
      value.substr(value.size() - kBase64Suffix.size()) != kBase64Suffix) {
    return std::string(value);
  }
  const std::string_view b64 = value.substr(
      kBase64Prefix.size(), value.size() - kBase64Prefix.size() - kBase64Suffix.size());
  auto decoded = Base64Decode(b64);
  // Canonical: exactly what encoding the bytes gives back (padding and alphabet included).
  if (!decoded || Base64Encode(*decoded) != b64 || !IsValidUtf8(*decoded)) return std::nullopt;
  return decoded;
}

}  // namespace engram::mcp
