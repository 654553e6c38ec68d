// LeaderboardService: the Agent Memory Leaderboard's Add/Search contract over the store and the
// in-memory shards. Requests arrive validated and decoded from the api layer.
//
// Add is durable and idempotent: the messages, their images and the request_id's answer are written
// in one transaction; a retry with the same request_id and body gets the same answer and stores
// nothing; the same request_id with another body is a Conflict. Retries that arrive while the first
// attempt is still in flight wait for it instead of racing it.
//
// Images: with an ImageTextExtractor set, the text OCR reads in a message's images is appended to
// the message's indexed text (BM25 and vector) before the write, so a search for a word shown only
// in an image finds the message at once; the stored ContentPart array, and so what search returns,
// is unchanged. OCR time is bounded per image; an image it cannot read adds no text and never
// fails the add.
//
// Idempotency records are kept per user_id (two users may send the same request_id) and expire
// (ExpireIdempotency, run by LeaderboardJanitor). DeleteUser and PurgeIdleUsers remove a user's
// data from the store and the shard registry (docs/leaderboard.md).
//
// Empty messages (no text, no image: "", whitespace, []) keep their position in the order but are
// not stored: nothing would index or show them, and a search must never return empty content.
//
// Thread-safety: safe for concurrent use. Does not own the store, registry or analyzer.
#pragma once

#include <chrono>
#include <cstdint>
#include <future>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "common/clock.h"
#include "common/mutex.h"
#include "core/rerank_stage.h"
#include "core/search_explanation.h"
#include "core/shard_registry.h"
#include "core/vector_backfill.h"
#include "embed/embedder.h"
#include "index/analyzer.h"
#include "store/message_store.h"

namespace engram {

class ImageTextExtractor;

// One part of a message: text, or an image held by its content hash.
struct ContentPart {
  bool is_image = false;
  std::string text;          // text parts
  std::string image_sha256;  // image parts
  std::string image_mime;
};

struct LeaderboardMessage {
  std::string role;                     // "user" | "assistant"
  std::optional<int64_t> timestamp_ms;  // Unix milliseconds
  bool content_is_parts = false;        // the client sent a ContentPart array
  std::vector<ContentPart> parts;
};

struct LeaderboardAddRequest {
  std::string request_id;
  std::string user_id;
  std::string session_id;
  std::vector<LeaderboardMessage> messages;
  std::vector<ImageBlob> images;  // decoded images referenced by parts, one per hash
  std::string body_hash;          // canonical hash of the request body (idempotency)
  std::string response_json;      // the answer to remember for retries
};

struct LeaderboardSearchRequest {
  std::string query;
  std::vector<std::string> options;
  std::string user_id;
  int top_k = 10;
  bool explain = false;  // each hit says how it got its score (LeaderboardHit::explain)
  // "Now" for the query's relative dates (reference_date; core/query_time.h), microseconds.
  std::optional<int64_t> reference_us;
};

// Where a result cut from a long message sits in it (index/passages.h).
struct LeaderboardExcerpt {
  std::string role;         // of the message
  std::string title;        // the message's first non-blank line (often its file name)
  uint32_t first_line = 0;  // 1-based lines of the message the result's text spans
  uint32_t last_line = 0;
  uint32_t lines = 0;  // of the whole message
  uint32_t bytes = 0;  // of the whole message
};

// A turn of a result that shows a run of its session's turns (RetrievalOptions::excerpts).
struct LeaderboardTurn {
  std::string role;
  std::string text;
  std::vector<ContentPart> parts;  // non-empty when the turn was sent as a ContentPart array
  int64_t time_us = 0;
};

struct LeaderboardHit {
  std::string id;
  std::string text;                           // the message, or the excerpt of it that matched
  std::optional<LeaderboardExcerpt> excerpt;  // set when `text` is a part of the message
  // Non-empty when the memory was sent as a ContentPart array and the result shows it alone
  // (otherwise its parts are those of its turn in `turns`).
  std::vector<ContentPart> parts;
  float score = 0;
  int64_t time_us = 0;
  // The turns the result shows, in conversation order, this hit's own among them; empty when
  // it shows this hit alone (text, parts).
  std::vector<LeaderboardTurn> turns;
  // Set when the search asked for it: how the hit's own message (or passage) got its score.
  std::optional<SearchExplanation> explain;
};

struct LeaderboardSearchResult {
  std::vector<LeaderboardHit> hits;
  std::map<std::string, ImageBlob> images;  // images referenced by hits, by hash
};

// What a retention sweep deleted; `status` is the first failure (the users before it are gone).
struct LeaderboardPurge {
  int64_t users = 0;
  UserDeletion deleted;  // summed over the users
  Status status;
};

struct LeaderboardOptions {
  std::string workspace = "leaderboard";  // the store namespace leaderboard data lives in
  RetrievalOptions retrieval;
  // How long a search waits for vectors of just-written memories of its scope before answering
  // with what it has (BM25 still finds them).
  std::chrono::milliseconds vector_wait{3000};
  // ...but only when at most this much text is pending for the scope (≈ half a second of model
  // work); more would stall the search, so it answers with BM25 and the vectors it has.
  size_t vector_wait_max_bytes = 64 << 10;
  // With a reranker (SetReranker): how many of a search's best results it reorders.
  size_t rerank_candidates = 30;
  // The time stamped on what an add stores (and on its messages without a timestamp); null:
  // RealClock(). Not owned; it must outlive the service.
  const Clock* clock = nullptr;
};

class LeaderboardService {
 public:
  // `embedder` may be null: BM25 only. `vectors` computes vectors of new memories off the write
  // path; null with an embedder: vectors are computed inline before the write.
  LeaderboardService(MessageStore* store, ShardRegistry* shards, const Analyzer* analyzer,
                     const Embedder* embedder, VectorBackfill* vectors,
                     LeaderboardOptions options = {});

  // OCR of images (see the header comment); null (the default): images add no text. Set before
  // the first Add; not owned.
  void SetImageText(const ImageTextExtractor* ocr) { ocr_ = ocr; }
  // An optional reranker for the best options().rerank_candidates results of each search (see
  // extract/reranker.h); null (the default): none. Its failure never fails a search: the search
  // answers in its own order. Set before the first Search; not owned.
  void SetReranker(const Reranker* reranker) { rerank_.Set(reranker, options_.rerank_candidates); }
  const RerankStage& rerank() const { return rerank_; }

  // Returns the response JSON to send (the remembered one for a retry).
  Result<std::string> Add(const LeaderboardAddRequest& request);
  Result<LeaderboardSearchResult> Search(const LeaderboardSearchRequest& request);
  // The non-blocking probe: whether the user's scope is loaded, so a search answers without
  // loading it from the store (ShardRegistry::Loaded).
  bool ScopeLoaded(const std::string& user_id) const;

  // Deletes every message, image (when no other message shows it), vector and idempotency record
  // of one user and drops its shard. Deleting an unknown or already deleted user succeeds with
  // zero counts.
  Result<UserDeletion> DeleteUser(const std::string& user_id);
  // Deletes, as DeleteUser, up to `max_users` users whose latest add is older than `before_us`.
  LeaderboardPurge PurgeIdleUsers(int64_t before_us, size_t max_users);
  // Deletes idempotency records created before `before_s` (Unix seconds); returns how many.
  Result<int64_t> ExpireIdempotency(int64_t before_s);
  // Whether the store can commit (the health probe).
  Status CheckWritable() { return store_->CheckWritable(); }

  const LeaderboardOptions& options() const { return options_; }

 private:
  struct InFlight {
    std::string body_hash;
    std::shared_future<Result<std::string>> result;
  };
  Result<std::string> DoAdd(const LeaderboardAddRequest& request);

  MessageStore* store_;
  ShardRegistry* shards_;
  const Analyzer* analyzer_;
  const Embedder* embedder_;
  VectorBackfill* vectors_;
  LeaderboardOptions options_;
  const Clock* const clock_;  // options_.clock, or RealClock()
  const ImageTextExtractor* ocr_ = nullptr;
  RerankStage rerank_{"leaderboard search"};

  Mutex inflight_mu_;
  // By user_id and request_id (a unit separator between them).
  std::map<std::string, InFlight> inflight_ GUARDED_BY(inflight_mu_);
};

// Serialises parts for storage ({"type":"text"|"image", ...}) and back.
std::string PartsToStoredJson(const std::vector<ContentPart>& parts);
std::vector<ContentPart> PartsFromStoredJson(const std::string& json);

}  // namespace engram
