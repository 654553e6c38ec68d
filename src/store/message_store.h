// MessageStore: the Leaderboard's messages (one scope per workspace + user_id), their images and
// idempotency records, and the Leaderboard data lifecycle (deleting a user, finding idle users,
// expiring idempotency records; docs/leaderboard.md).
//
// Thread-safety: implementations are safe for concurrent use from any number of threads.
// Durability: a write call returns OK only after its data is durable on disk (fsync).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"
#include "store/memory_vectors.h"
#include "store/types.h"

namespace engram {

class MessageStore : public virtual MemoryVectors {
 public:
  // Stores a batch atomically and durably. With an idempotency record whose key already exists,
  // writes nothing and reports the existing record.
  virtual Result<AddOutcome> Add(AddBatch batch) = 0;

  // Every leaderboard message of one scope (workspace + user_id), in write order.
  virtual Result<std::vector<MemoryRecord>> LoadScope(std::string_view workspace,
                                                      std::string_view user_id) = 0;

  // Leaderboard messages of one scope written or changed after version `since` (vectors
  // included), and the scope's version they bring the reader to.
  virtual Result<ScopeDelta> LoadScopeSince(std::string_view workspace, std::string_view user_id,
                                            int64_t since) {
    (void)workspace, (void)user_id, (void)since;
    return Status::Internal("LoadScopeSince: this store is not shared");
  }

  // The idempotency record of `key` for `user_id`, if one is stored. A read: an add checks it
  // before it waits for room in a queue, so a retry of a stored request answers at once.
  virtual Result<std::optional<IdempotencyRecord>> FindIdempotency(std::string_view user_id,
                                                                   std::string_view key) = 0;

  // Images by hash; missing hashes are skipped.
  virtual Result<std::vector<ImageBlob>> GetImages(const std::vector<std::string>& sha256s) = 0;

  // A cheap probe that the store can still commit (used by health checks). It probes the whole
  // store; it is part of this contract because the Leaderboard's own health route answers with it.
  virtual Status CheckWritable() = 0;

  // The data lifecycle (sqlite_lifecycle.cc, pg_lifecycle.cc):
  // Deletes every leaderboard message of one user (workspace + user_id), their vectors, the
  // images no other memory shows and the user's idempotency records, atomically and durably. An
  // unknown user is not an error (all counts 0). SQLite also leaves no readable copy of the text
  // in its files: deleted content is zeroed (secure_delete) and the WAL truncated before it
  // returns; kUnavailable when the WAL stayed busy (the rows are gone; a repeated call truncates).
  virtual Result<UserDeletion> DeleteLeaderboardUser(std::string_view workspace,
                                                     std::string_view user_id) {
    (void)workspace, (void)user_id;
    return Status::Internal("DeleteLeaderboardUser: not supported by this store");
  }
  // Users of a workspace whose latest leaderboard message was written (created_at) before
  // `before_us`, at most `limit` of them, in no particular order.
  virtual Result<std::vector<std::string>> LeaderboardUsersIdleSince(std::string_view workspace,
                                                                     int64_t before_us,
                                                                     size_t limit) {
    (void)workspace, (void)before_us, (void)limit;
    return Status::Internal("LeaderboardUsersIdleSince: not supported by this store");
  }
  // Deletes idempotency records created before `before_s` (Unix seconds); returns how many.
  virtual Result<int64_t> ExpireIdempotency(int64_t before_s) {
    (void)before_s;
    return Status::Internal("ExpireIdempotency: not supported by this store");
  }
};

}  // namespace engram
