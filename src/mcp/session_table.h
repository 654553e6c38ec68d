// Sessions of the Streamable HTTP transport (Mcp-Session-Id).
//
// A session starts with a successful initialize and remembers what later requests need: the
// negotiated protocol revision, the workspace it was opened on, and a digest of the credential
// that opened it. A request finds its session only with the same workspace and credential, so a
// session id that leaks is of no use with another key or in another workspace (the answer is the
// same 404 as for an unknown id).
//
// Bounded: at most max_sessions live at once. Sessions unused for idle_timeout expire (hosts
// rarely send DELETE); when the table is full the expired ones are dropped, and if none has
// expired a new session is refused (kUnavailable) rather than ending someone else's. So that one
// key (or one client address) cannot fill the table for everyone, each holds at most
// max_per_credential (max_per_client) sessions: a new one beyond a key's quota ends that key's
// least recently used session; beyond an address's quota, the least recently used session of the
// same key from that address, and if that key has none there (the address is a proxy full of
// other keys' sessions), the new one is refused. No quota ends another key's session. Development
// mode has no key: the per-key quota does not apply, and the per-address quota separates
// clients.
//
// Ids are 192 random bits from OpenSSL's generator, as hex: unguessable, visible ASCII.
//
// Thread-safety: all methods are safe to call concurrently (one mutex; every operation is a map
// lookup). The clock is injected for tests.
#pragma once

#include <chrono>
#include <cstddef>
#include <functional>
#include <optional>
#include <string>
#include <unordered_map>

#include "common/mutex.h"
#include "common/status.h"

namespace engram::mcp {

struct SessionTableOptions {
  size_t max_sessions = 10000;
  size_t max_per_credential = 1000;  // sessions one key holds
  size_t max_per_client = 1000;      // sessions one client address holds
  std::chrono::milliseconds idle_timeout{std::chrono::minutes(30)};
};

struct Session {
  std::string id;
  std::string workspace;
  std::string credential;  // digest of the presented key ("" in development mode)
  std::string protocol_version;
  bool initialized = false;  // notifications/initialized received
};

class SessionTable {
 public:
  using Clock = std::function<std::chrono::steady_clock::time_point()>;
  explicit SessionTable(SessionTableOptions options, Clock clock = nullptr);

  // A new session for `credential` (a digest) from `client` (its address); at a quota, ends the
  // key's least recently used session (see above); kUnavailable when an address's quota is held
  // by other keys, or when max_sessions live and none has expired.
  Result<Session> Create(const std::string& workspace, const std::string& credential,
                         const std::string& client, const std::string& protocol_version);
  // The live session `id` opened on `workspace` with `credential`, marked as used now; nullopt
  // when unknown, expired or opened otherwise.
  std::optional<Session> Find(const std::string& id, const std::string& workspace,
                              const std::string& credential);
  void MarkInitialized(const std::string& id);
  // Ends the session (same matching as Find); false when there was none.
  bool Remove(const std::string& id, const std::string& workspace, const std::string& credential);

  size_t size() const;

 private:
  struct Entry {
    Session session;
    std::string client;
    std::chrono::steady_clock::time_point last_used;
  };
  using Map = std::unordered_map<std::string, Entry>;
  bool Expired(const Entry& e, std::chrono::steady_clock::time_point now) const;
  void DropExpired(std::chrono::steady_clock::time_point now) REQUIRES(mu_);
  // Erases one session and its quota counts; returns the next entry.
  Map::iterator Erase(Map::iterator it) REQUIRES(mu_);
  // Ends the least recently used session of which `owns` is true; false when there is none.
  bool EvictLeastRecentlyUsed(const std::function<bool(const Entry&)>& owns) REQUIRES(mu_);

  const SessionTableOptions options_;
  const Clock clock_;
  mutable Mutex mu_;
  Map sessions_ GUARDED_BY(mu_);
  std::unordered_map<std::string, size_t> per_credential_ GUARDED_BY(mu_);
  std::unordered_map<std::string, size_t> per_client_ GUARDED_BY(mu_);
  std::chrono::steady_clock::time_point last_sweep_ GUARDED_BY(mu_);
};

// A fixed-size digest of a presented credential (SHA-256, hex), so the table keeps no keys.
std::string CredentialDigest(std::string_view credential);

}  // namespace engram::mcp
