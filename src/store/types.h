// Plain records exchanged with a Store. Value types; no invariants beyond field comments.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/job_status.h"

namespace engram {

// One stored memory: a leaderboard message or (later) an extracted memory.
struct MemoryRecord {
  int64_t seq = 0;  // assigned by the store on insert; monotonic per store
  std::string id;   // m-<uuid>
  std::string workspace;
  std::string user_id;
  std::string agent_id;
  std::string run_id;
  std::string app_id;  // agent memories: the fourth scope id (mem0's app_id); "" = not set
  std::string session_id;
  std::string role;
  std::string text;        // the indexed text; text parts joined by '\n'
  std::string parts_json;  // ContentPart array with image references; empty when text only
  std::string metadata_json = "{}";
  std::optional<int64_t> source_ts_us;  // when the message happened, if the client said
  int32_t position = 0;                 // index within its add request
  int64_t created_at_us = 0;
  int64_t updated_at_us = 0;
  std::optional<int64_t> expires_at_us;  // hidden from reads after this time; agent memories only
  // Agent memories: short category names (e.g. "food"), assigned when the memory is written.
  std::vector<std::string> categories;
  // The memory's embedding and the model that made it; empty when it has none (yet).
  std::vector<float> vector;
  std::string vector_model;
  // Agent memories: where the memory came from, a JSON object (the API's "provenance": event,
  // extractor, source messages, what an UPDATE replaced); empty when unknown.
  std::string provenance_json;
};

// A vector computed for an existing memory (re-embedding after a model change).
struct VectorUpdate {
  int64_t seq = 0;
  std::string model;
  std::vector<float> vector;
};

// An image stored once under the SHA-256 of its bytes.
struct ImageBlob {
  std::string sha256;
  std::string mime;
  std::string bytes;
};

// The remembered answer to a request_id, so a retry gets the same answer. Keys are unique per
// user_id: two users may send the same request_id, and deleting a user deletes its records.
struct IdempotencyRecord {
  std::string key;
  std::string body_hash;
  std::string response_json;
  std::string user_id;
};

// What deleting one leaderboard user removed.
struct UserDeletion {
  int64_t messages = 0;
  int64_t images = 0;  // images no remaining message shows
  int64_t vectors = 0;
  int64_t idempotency = 0;
};

// One atomic write: everything or nothing is stored.
struct AddBatch {
  std::optional<IdempotencyRecord> idempotency;  // when set, the batch is skipped if the key exists
  std::vector<ImageBlob> images;
  std::vector<MemoryRecord> memories;
};

struct AddOutcome {
  // True when the idempotency key already existed: nothing was written and `existing` holds the
  // stored record (the caller compares body hashes).
  bool duplicate = false;
  IdempotencyRecord existing;
  std::vector<MemoryRecord> stored;  // the memories as written, seq filled in
};

// One asynchronous memory add (an "event" of the memory API): a durable job row.
struct MemoryEventRecord {
  std::string id;  // me-<uuid>
  std::string workspace;
  // Stored and rendered as PENDING | RUNNING | SUCCEEDED | FAILED (JobVocabulary::kMemoryEvent).
  JobStatus status = JobStatus::kPending;
  std::string request_json;  // the validated add request
  std::string result_json;   // set when finished
  std::string error_message;
  int64_t created_at_us = 0;
  int64_t updated_at_us = 0;
};

// One change of an agent memory, with what it replaced (for the history).
struct MemoryChange {
  enum class Op { kInsert, kUpdate, kDelete };
  Op op = Op::kInsert;
  // kInsert: the whole record (seq is filled in by the store). kUpdate: id, text, metadata_json,
  // categories, created_at_us, updated_at_us, expires_at_us and, when non-empty, vector +
  // vector_model (an empty vector keeps the old one if the text is unchanged, else drops it: it no
  // longer matches the text). kDelete: id.
  MemoryRecord record;
  std::string old_text;  // kUpdate / kDelete: for the history
  std::string old_metadata_json;
};

// Changes applied atomically, with their history rows and, optionally, the end of their event.
struct MemoryChangeBatch {
  std::string workspace;
  std::string event_id;  // recorded in history rows; "" for direct API calls
  std::vector<MemoryChange> changes;
  // When set, the event row gets this status / result / error in the same transaction.
  std::optional<MemoryEventRecord> finish_event;
  // Shared stores: when set and the workspace's agent-memory version differs (another node wrote
  // since the caller planned these changes), nothing is written and kConflict is returned.
  std::optional<int64_t> expected_version;
};

struct MemoryChangeOutcome {
  std::vector<MemoryRecord> inserted;  // as written, seq filled in
  // Per change: false when an update or delete found no such memory (deleted meanwhile).
  std::vector<bool> applied;
};

// What changed in a scope after a version a node's cache has seen (shared stores only).
struct ScopeDelta {
  int64_t version = 0;                   // the scope's version this delta brings the reader to
  std::vector<MemoryRecord> upserts;     // rows inserted or changed (the whole row), in seq order
  std::vector<std::string> removed_ids;  // agent memories deleted
};

// Keys of scopes whose version a shared store tracks. The unit separator keeps the parts apart.
inline std::string ScopeKeyMessages(std::string_view workspace, std::string_view user_id) {
  return std::string("m\x1f").append(workspace).append("\x1f").append(user_id);
}
inline std::string ScopeKeyAgentMemories(std::string_view workspace) {
  return std::string("a\x1f").append(workspace);
}
inline std::string ScopeKeySkills(std::string_view workspace) {
  return std::string("s\x1f").append(workspace);
}
inline std::string ScopeKeyKb(std::string_view workspace, std::string_view kb_id) {
  return std::string("k\x1f").append(workspace).append("\x1f").append(kb_id);
}

// A user's verdict on one agent memory (mem0's feedback), kept for later review.
struct MemoryFeedbackRecord {
  std::string id;  // mf-<uuid>
  std::string memory_id;
  std::string feedback;  // POSITIVE | NEGATIVE | VERY_NEGATIVE | "" (no verdict)
  std::string reason;
  int64_t created_at_us = 0;
};

struct HistoryRecord {
  int64_t seq = 0;
  std::string memory_id;
  std::string event;  // ADD | UPDATE | DELETE
  std::optional<std::string> old_text;
  std::optional<std::string> new_text;
  std::optional<std::string> old_metadata_json;
  std::optional<std::string> new_metadata_json;
  std::string event_id;
  int64_t at_us = 0;
  // The provenance of the state this entry wrote (ADD / UPDATE); empty for DELETE and when unknown.
  std::string provenance_json;
};

}  // namespace engram
