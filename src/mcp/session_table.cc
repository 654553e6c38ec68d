#include "mcp/session_table.h"

#include <openssl/rand.h>

#include <algorithm>

#include "common/codec.h"

namespace engram::mcp {

std::string CredentialDigest(std::string_view credential) {
  if (credential.empty()) return "";
  return Sha256Hex(credential);
}

SessionTable::SessionTable(SessionTableOptions options, Clock clock)
    : options_(options),
      clock_(clock ? std::move(clock) : Clock([] { return std::chrono::steady_clock::now(); })),
      last_sweep_(clock_()) {}

bool SessionTable::Expired(const Entry& e, std::chrono::steady_clock::time_point now) const {
  return now - e.last_used > options_.idle_timeout;
}

namespace {

void Decrement(std::unordered_map<std::string, size_t>& counts, const std::string& key) {
  auto it = counts.find(key);
  if (it != counts.end() && --it->second == 0) counts.erase(it);
}

}  // namespace

SessionTable::Map::iterator SessionTable::Erase(Map::iterator it) {
  Decrement(per_credential_, it->second.session.credential);
  Decrement(per_client_, it->second.client);
  return sessions_.erase(it);
}

void SessionTable::DropExpired(std::chrono::steady_clock::time_point now) {
  for (auto it = sessions_.begin(); it != sessions_.end();) {
    it = Expired(it->second, now) ? Erase(it) : std::next(it);
  }
  last_sweep_ = now;
}

bool SessionTable::EvictLeastRecentlyUsed(const std::function<bool(const Entry&)>& owns) {
  // A scan: this runs only for a key or address at its quota, and the table is bounded.
  auto oldest = sessions_.end();
  for (auto it = sessions_.begin(); it != sessions_.end(); ++it) {
    if (owns(it->second) &&
        (oldest == sessions_.end() || it->second.last_used < oldest->second.last_used)) {
      oldest = it;
    }
  }
  if (oldest == sessions_.end()) return false;
  Erase(oldest);
  return true;
}

Result<Session> SessionTable::Create(const std::string& workspace, const std::string& credential,
                                     const std::string& client,
                                     const std::string& protocol_version) {
  unsigned char random[24];
  if (RAND_bytes(random, sizeof(random)) != 1) {
    return Status::Internal("cannot generate a session id");
  }
  Session session{HexEncode({reinterpret_cast<const char*>(random), sizeof(random)}), workspace,
                  credential, protocol_version, false};
  const auto now = clock_();
  MutexLock lock(&mu_);
  // Sweeping now and then keeps abandoned sessions from holding memory until the table fills.
  if (sessions_.size() >= options_.max_sessions || now - last_sweep_ > options_.idle_timeout) {
    DropExpired(now);
  }
  // Development mode has no key: the per-key quota would be one global quota there.
  if (auto it = per_credential_.find(credential);
      !credential.empty() && it != per_credential_.end() &&
      it->second >= std::max<size_t>(1, options_.max_per_credential)) {
    EvictLeastRecentlyUsed([&](const Entry& e) { return e.session.credential == credential; });
  }
  if (auto it = per_client_.find(client);
      it != per_client_.end() && it->second >= std::max<size_t>(1, options_.max_per_client)) {
    // Behind a proxy or NAT many keys share an address: a key ends only its own sessions there.
    // An address full of other keys' sessions refuses the new one instead.
    if (!EvictLeastRecentlyUsed([&](const Entry& e) {
          return e.client == client && e.session.credential == credential;
        })) {
      return Status::Unavailable("too many open MCP sessions from this address (" +
                                 std::to_string(options_.max_per_client) +
                                 "); end unused ones with DELETE or retry later");
    }
  }
  if (sessions_.size() >= options_.max_sessions) {
    return Status::Unavailable("too many open MCP sessions (" +
                               std::to_string(options_.max_sessions) +
                               "); end unused ones with DELETE or retry later");
  }
  sessions_.emplace(session.id, Entry{session, client, now});
  ++per_credential_[credential];
  ++per_client_[client];
  return session;
}

std::optional<Session> SessionTable::Find(const std::string& id, const std::string& workspace,
                                          const std::string& credential) {
  const auto now = clock_();
  MutexLock lock(&mu_);
  auto it = sessions_.find(id);
  if (it == sessions_.end()) return std::nullopt;
  if (Expired(it->second, now)) {
    Erase(it);
    return std::nullopt;
  }
  const Session& s = it->second.session;
  if (s.workspace != workspace || s.credential != credential) return std::nullopt;
  it->second.last_used = now;
  return s;
}

void SessionTable::MarkInitialized(const std::string& id) {
  MutexLock lock(&mu_);
  if (auto it = sessions_.find(id); it != sessions_.end()) it->second.session.initialized = true;
}

bool SessionTable::Remove(const std::string& id, const std::string& workspace,
                          const std::string& credential) {
  const auto now = clock_();
  MutexLock lock(&mu_);
  auto it = sessions_.find(id);
  if (it == sessions_.end()) return false;
  const Session& s = it->second.session;
  if (s.workspace != workspace || s.credential != credential) return false;
  const bool live = !Expired(it->second, now);
  Erase(it);
  return live;
}

size_t SessionTable::size() const {
  MutexLock lock(&mu_);
  return sessions_.size();
}

}  // namespace engram::mcp
