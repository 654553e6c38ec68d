// ApiKeyAuth: API keys from configuration, optionally limited to workspaces.
//
// A key spec is "KEY" (every workspace) or "KEY:ws1:ws2" (only those workspaces). Presented keys
// are accepted from "Authorization: Bearer KEY", "Authorization: Token KEY" or "X-Api-Key: KEY".
// Comparison is constant-time: digests of every configured key are compared in full.
// Thread-safety: immutable after construction.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "common/status.h"
#include "server/http_types.h"

namespace engram {

// A workspace name a client may choose: 1-64 letters, digits, '-', '_' or '.', other than "."
// and "..".
bool IsValidWorkspaceName(const std::string& workspace);

class ApiKeyAuth {
 public:
  // Rejects empty keys or workspace lists.
  static Result<ApiKeyAuth> FromSpecs(const std::vector<std::string>& specs);

  // No keys: development mode (the server only listens on loopback then).
  bool dev_mode() const { return keys_.empty(); }
  // Some key is limited to some workspaces (not every caller may reach every workspace).
  bool limits_workspaces() const;

  // OK, kUnauthenticated (missing or unknown key) or kForbidden (key not valid for `workspace`).
  Status Check(const HttpRequest& request, const std::string& workspace) const;
  // As Check, for an answer about every workspace: a key limited to some is kForbidden.
  Status CheckAllWorkspaces(const HttpRequest& request) const;
  // OK when the request carries a valid key (any workspaces), else as Check.
  Status CheckAnyWorkspace(const HttpRequest& request) const;
  // The one workspace the request's key is limited to; nullopt when the key covers several or
  // all, in development mode, or when no valid key is presented.
  std::optional<std::string> SoleWorkspace(const HttpRequest& request) const;
  // The workspaces the request's key is limited to, in its spec's order; nullopt when the key
  // covers every workspace (or in development mode). As Check when no valid key is presented.
  Result<std::optional<std::vector<std::string>>> LimitedTo(const HttpRequest& request) const;

 private:
  struct Key {
    std::string digest;                   // SHA-256 of the key, raw hex
    std::vector<std::string> workspaces;  // empty: all
  };
  // The configured key presented with the request (OK with nullptr in development mode).
  Result<const Key*> Match(const HttpRequest& request) const;

  std::vector<Key> keys_;
};

}  // namespace engram
