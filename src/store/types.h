// Plain records exchanged with a Store. Value types; no invariants beyond field comments.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace engram {

// One stored memory: a leaderboard message or (later) an extracted memory.
struct MemoryRecord {
  int64_t seq = 0;  // assigned by the store on insert; monotonic per store
  std::string id;   // m-<uuid>
  std::string workspace;
  std::string user_id;
  std::string agent_id;
  std::string run_id;
  std::string session_id;
  std::string role;
  std::string text;        // the indexed text; text parts joined by '\n'
  std::string parts_json;  // ContentPart array with image references; empty when text only
  std::string metadata_json = "{}";
  std::optional<int64_t> source_ts_us;  // when the message happened, if the client said
  int32_t position = 0;                 // index within its add request
  int64_t created_at_us = 0;
  int64_t updated_at_us = 0;
  // The memory's embedding and the model that made it; empty when it has none (yet).
  std::vector<float> vector;
  std::string vector_model;
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

// The remembered answer to a request_id, so a retry gets the same answer.
struct IdempotencyRecord {
  std::string key;
  std::string body_hash;
  std::string response_json;
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

}  // namespace engram
