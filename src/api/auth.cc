#include "api/auth.h"

#include <openssl/crypto.h>

#include <algorithm>

#include "common/codec.h"

namespace engram {

namespace {

std::string_view Trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

bool StartsWithNoCase(std::string_view s, std::string_view prefix) {
  if (s.size() < prefix.size()) return false;
  for (size_t i = 0; i < prefix.size(); ++i) {
    if (std::tolower(static_cast<unsigned char>(s[i])) != prefix[i]) return false;
  }
  return true;
}

}  // namespace

bool IsValidWorkspaceName(const std::string& workspace) {
  if (workspace.empty() || workspace.size() > 64) return false;
  // "." and ".." would name a directory's self and parent wherever a workspace names a directory.
  if (workspace == "." || workspace == "..") return false;
  for (char c : workspace) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                    c == '-' || c == '_' || c == '.';
    if (!ok) return false;
  }
  return true;
}

bool ApiKeyAuth::limits_workspaces() const {
  for (const Key& key : keys_) {
    if (!key.workspaces.empty()) return true;
  }
  return false;
}

Result<ApiKeyAuth> ApiKeyAuth::FromSpecs(const std::vector<std::string>& specs) {
  ApiKeyAuth auth;
  for (const auto& raw : specs) {
    std::string_view spec = Trim(raw);
    if (spec.empty()) continue;  // "a,,b" in an environment variable
    Key key;
    size_t colon = spec.find(':');
    std::string_view secret = spec.substr(0, colon);
    if (secret.empty()) return Status::InvalidParameter("api key must not be empty");
    key.digest = Sha256Hex(secret);
    while (colon != std::string_view::npos) {
      size_t next = spec.find(':', colon + 1);
      std::string_view ws = spec.substr(
          colon + 1, next == std::string_view::npos ? std::string_view::npos : next - colon - 1);
      if (ws.empty()) return Status::InvalidParameter("api key workspace list has an empty name");
      key.workspaces.emplace_back(ws);
      colon = next;
    }
    auth.keys_.push_back(std::move(key));
  }
  return auth;
}

Result<const ApiKeyAuth::Key*> ApiKeyAuth::Match(const HttpRequest& request) const {
  if (dev_mode()) return static_cast<const Key*>(nullptr);
  std::string_view presented;
  if (const std::string* h = request.Header("authorization")) {
    std::string_view v = Trim(*h);
    if (StartsWithNoCase(v, "bearer ")) {
      presented = Trim(v.substr(7));
    } else if (StartsWithNoCase(v, "token ")) {
      presented = Trim(v.substr(6));
    }
  }
  if (presented.empty()) {
    if (const std::string* h = request.Header("x-api-key")) presented = Trim(*h);
  }
  if (presented.empty()) {
    return Status::Unauthenticated(
        "missing API key: send Authorization: Bearer <key>, Authorization: Token <key> or "
        "X-Api-Key: <key>");
  }
  const std::string digest = Sha256Hex(presented);
  const Key* match = nullptr;
  for (const Key& k : keys_) {
    // Every key is compared in full so timing does not reveal which one (or how much) matched.
    bool eq = CRYPTO_memcmp(k.digest.data(), digest.data(), digest.size()) == 0;
    if (eq && match == nullptr) match = &k;
  }
  if (match == nullptr) return Status::Unauthenticated("invalid API key");
  return match;
}

Status ApiKeyAuth::Check(const HttpRequest& request, const std::string& workspace) const {
  auto key = Match(request);
  if (!key.ok()) return key.status();
  const Key* match = *key;
  if (match == nullptr) return Status::Ok();  // development mode
  if (!match->workspaces.empty() && std::find(match->workspaces.begin(), match->workspaces.end(),
                                              workspace) == match->workspaces.end()) {
    return Status::Forbidden("this API key is not allowed to access workspace " + workspace);
  }
  return Status::Ok();
}

Status ApiKeyAuth::CheckAllWorkspaces(const HttpRequest& request) const {
  auto key = Match(request);
  if (!key.ok()) return key.status();
  if (*key != nullptr && !(*key)->workspaces.empty()) {
    return Status::Forbidden("this API key is limited to some workspaces; this answer covers all");
  }
  return Status::Ok();
}

Status ApiKeyAuth::CheckAnyWorkspace(const HttpRequest& request) const {
  return Match(request).status();
}

std::optional<std::string> ApiKeyAuth::SoleWorkspace(const HttpRequest& request) const {
  auto key = Match(request);
  if (!key.ok() || *key == nullptr || (*key)->workspaces.size() != 1) return std::nullopt;
  return (*key)->workspaces.front();
}

Result<std::optional<std::vector<std::string>>> ApiKeyAuth::LimitedTo(
    const HttpRequest& request) const {
  auto key = Match(request);
  if (!key.ok()) return key.status();
  if (*key == nullptr || (*key)->workspaces.empty()) {
    return std::optional<std::vector<std::string>>();
  }
  return std::optional<std::vector<std::string>>((*key)->workspaces);
}

}  // namespace engram
