#include "core/leaderboard_service.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <nlohmann/json.hpp>
#include <string_view>

#include "common/ids.h"
#include "common/json_reader.h"
#include "common/time_util.h"
#include "core/passage_vectors.h"
#include "core/query_time.h"
#include "extract/ocr/image_text.h"
#include "index/question_form.h"

namespace engram {

namespace {

// True when `text` shows nothing: only ASCII and Unicode white space (no-break, ideographic and
// typographic spaces, zero-width no-break space) or nothing at all.
bool IsBlankText(std::string_view text) {
  size_t i = 0;
  while (i < text.size()) {
    const auto c = static_cast<unsigned char>(text[i]);
    if (c == ' ' || (c >= '\t' && c <= '\r')) {
      ++i;
      continue;
    }
    // The multi-byte spaces, by their UTF-8 bytes.
    static constexpr std::string_view kSpaces[] = {
        "\xC2\x85",     "\xC2\xA0",     "\xE1\x9A\x80", "\xE2\x80\x80", "\xE2\x80\x81",
        "\xE2\x80\x82", "\xE2\x80\x83", "\xE2\x80\x84", "\xE2\x80\x85", "\xE2\x80\x86",
        "\xE2\x80\x87", "\xE2\x80\x88", "\xE2\x80\x89", "\xE2\x80\x8A", "\xE2\x80\x8B",
        "\xE2\x80\xA8", "\xE2\x80\xA9", "\xE2\x80\xAF", "\xE2\x81\x9F", "\xE3\x80\x80",
        "\xEF\xBB\xBF"};
    bool space = false;
    for (std::string_view s : kSpaces) {
      if (text.substr(i, s.size()) == s) {
        i += s.size();
        space = true;
        break;
      }
    }
    if (!space) return false;
  }
  return true;
}

// Appends the text OCR reads in the message's images to *text. `cache` holds this request's
// results by image hash (an image sent twice is read once). Unreadable images add nothing.
void AppendImageText(const ImageTextExtractor& ocr, const LeaderboardMessage& msg,
                     const std::vector<ImageBlob>& images,
                     std::map<std::string, std::string>* cache, std::string* text) {
  for (const auto& p : msg.parts) {
    if (!p.is_image) continue;
    auto cached = cache->find(p.image_sha256);
    if (cached == cache->end()) {
      std::string read;
      for (const ImageBlob& img : images) {
        if (img.sha256 != p.image_sha256) continue;
        auto result = ocr.Extract(img.bytes);
        if (result.ok()) {
          read = std::move(*result);
        } else {
          spdlog::debug("OCR of image {} ({} bytes) gave no text: {}", p.image_sha256.substr(0, 12),
                        img.bytes.size(), result.status().message());
        }
        break;
      }
      cached = cache->emplace(p.image_sha256, std::move(read)).first;
    }
    if (cached->second.empty()) continue;
    if (!text->empty()) text->push_back('\n');
    *text += cached->second;
  }
}

}  // namespace

std::string PartsToStoredJson(const std::vector<ContentPart>& parts) {
  nlohmann::json arr = nlohmann::json::array();
  for (const auto& p : parts) {
    if (p.is_image) {
      arr.push_back({{"type", "image"}, {"sha256", p.image_sha256}, {"mime", p.image_mime}});
    } else {
      arr.push_back({{"type", "text"}, {"text", p.text}});
    }
  }
  return arr.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

std::vector<ContentPart> PartsFromStoredJson(const std::string& json) {
  std::vector<ContentPart> parts;
  auto arr = ReadJsonOrDiscarded(json, kStoredJsonLimits);
  if (!arr.is_array()) return parts;
  for (const auto& p : arr) {
    ContentPart part;
    if (p.value("type", "") == "image") {
      part.is_image = true;
      part.image_sha256 = p.value("sha256", "");
      part.image_mime = p.value("mime", "");
    } else {
      part.text = p.value("text", "");
    }
    parts.push_back(std::move(part));
  }
  return parts;
}

LeaderboardService::LeaderboardService(MessageStore* store, ShardRegistry* shards,
                                       const Analyzer* analyzer, const Embedder* embedder,
                                       VectorBackfill* vectors, LeaderboardOptions options)
    : store_(store),
      shards_(shards),
      analyzer_(analyzer),
      embedder_(embedder),
      vectors_(vectors),
      options_(std::move(options)),
      clock_(options_.clock != nullptr ? options_.clock : RealClock()) {}

Result<std::string> LeaderboardService::Add(const LeaderboardAddRequest& request) {
  const std::string key = request.user_id + '\x1f' + request.request_id;
  for (;;) {
    std::promise<Result<std::string>> promise;
    std::shared_future<Result<std::string>> waiting;
    std::string waiting_hash;
    {
      MutexLock lock(&inflight_mu_);
      auto it = inflight_.find(key);
      if (it != inflight_.end()) {
        waiting = it->second.result;
        waiting_hash = it->second.body_hash;
      } else {
        inflight_.emplace(key, InFlight{request.body_hash, promise.get_future().share()});
      }
    }
    if (waiting.valid()) {
      // Another attempt with this request_id is being written: its outcome decides ours.
      const Result<std::string>& first = waiting.get();
      if (!first.ok()) continue;  // it failed without storing anything: try ourselves
      if (waiting_hash != request.body_hash) {
        return Status::Conflict("request_id " + request.request_id +
                                " was already used with a different body");
      }
      return first;
    }
    Result<std::string> result = DoAdd(request);
    promise.set_value(result);
    {
      MutexLock lock(&inflight_mu_);
      inflight_.erase(key);
    }
    return result;
  }
}

namespace {

// The answer to a request whose request_id is already stored: the first answer for the same body,
// 409 for another.
Result<std::string> AnswerOfRetry(const LeaderboardAddRequest& request,
                                  const IdempotencyRecord& stored) {
  if (stored.body_hash != request.body_hash) {
    return Status::Conflict("request_id " + request.request_id +
                            " was already used with a different body");
  }
  return stored.response_json;
}

}  // namespace

Result<std::string> LeaderboardService::DoAdd(const LeaderboardAddRequest& request) {
  const int64_t now = clock_->WallMicros();
  AddBatch batch;
  batch.idempotency = IdempotencyRecord{"leaderboard:" + request.request_id, request.body_hash,
                                        request.response_json, request.user_id};
  // A retry of a stored request is answered before any work or wait: it must not be refused for
  // lack of room in the vector queue (429) when it would store nothing. The write below checks
  // again, in its transaction, for a retry that races this one.
  auto stored = store_->FindIdempotency(request.user_id, batch.idempotency->key);
  if (!stored.ok()) return stored.status();
  if (*stored) return AnswerOfRetry(request, **stored);
  batch.images = request.images;
  batch.memories.reserve(request.messages.size());
  std::map<std::string, std::string> image_text;  // OCR results of this request, by image hash
  for (size_t i = 0; i < request.messages.size(); ++i) {
    const LeaderboardMessage& msg = request.messages[i];
    MemoryRecord m;
    m.id = NewId("m");
    m.workspace = options_.workspace;
    m.user_id = request.user_id;
    m.session_id = request.session_id;
    m.role = msg.role;
    for (const auto& p : msg.parts) {
      if (p.is_image || p.text.empty()) continue;
      if (!m.text.empty()) m.text.push_back('\n');
      m.text += p.text;
    }
    if (ocr_ != nullptr) AppendImageText(*ocr_, msg, request.images, &image_text, &m.text);
    const bool has_image = std::any_of(msg.parts.begin(), msg.parts.end(),
                                       [](const ContentPart& p) { return p.is_image; });
    // An empty message has nothing to index or show: it is not stored, and its position stays
    // unused, so the others keep their source order and positions.
    if (!has_image && IsBlankText(m.text)) continue;
    if (msg.content_is_parts) m.parts_json = PartsToStoredJson(msg.parts);
    if (msg.timestamp_ms) m.source_ts_us = *msg.timestamp_ms * 1000;
    m.position = static_cast<int32_t>(i);
    m.created_at_us = m.updated_at_us = now;
    batch.memories.push_back(std::move(m));
  }
  // A chunk of empty messages only: the answer is remembered all the same (a retry gets it).
  // Without a background queue, vectors are computed before the write and commit with it.
  if (embedder_ != nullptr && vectors_ == nullptr && !batch.memories.empty()) {
    std::vector<std::string> texts;
    texts.reserve(batch.memories.size());
    for (const auto& m : batch.memories) texts.push_back(m.text);
    auto vectors = EmbedPassages(*embedder_, texts);
    if (!vectors.ok()) return vectors.status();
    for (size_t i = 0; i < batch.memories.size(); ++i) {
      batch.memories[i].vector = std::move((*vectors)[i]);
      batch.memories[i].vector_model = embedder_->model_id();
    }
  }
  // Load the scope before writing, so the write lands in a warm shard and the next search does
  // not pay for loading it.
  auto shard = shards_->Get(options_.workspace, request.user_id);
  if (!shard.ok()) return shard.status();
  // The vectors of earlier adds are computed in the background; while too much of them waits, an
  // add is refused (nothing stored; 429 with Retry-After) rather than held.
  const bool queues_vectors = embedder_ != nullptr && vectors_ != nullptr;
  size_t reserved_count = 0;
  size_t reserved_bytes = 0;
  if (queues_vectors && !batch.memories.empty()) {
    for (const auto& m : batch.memories) reserved_bytes += m.text.size();
    if (!vectors_->AdmitFresh(batch.memories.size(), reserved_bytes)) {
      return Status(StatusCode::kThrottled,
                    "the vectors of earlier adds are still being computed; retry the same "
                    "request after a short wait");
    }
    reserved_count = batch.memories.size();
  }
  auto outcome = store_->Add(std::move(batch));
  if (!outcome.ok() || outcome->duplicate) {
    if (reserved_count > 0) vectors_->ReleaseFresh(reserved_count, reserved_bytes);
  }
  if (!outcome.ok()) return outcome.status();
  if (outcome->duplicate) return AnswerOfRetry(request, outcome->existing);
  // Searchable before we answer: the very next search must see this write.
  (*shard)->Apply(outcome->stored);
  if (queues_vectors) {
    std::vector<std::pair<int64_t, std::string>> items;
    items.reserve(outcome->stored.size());
    for (const auto& m : outcome->stored) items.emplace_back(m.seq, m.text);
    vectors_->EnqueueFresh(*shard, std::move(items), reserved_count, reserved_bytes);
  }
  return request.response_json;
}

bool LeaderboardService::ScopeLoaded(const std::string& user_id) const {
  return shards_->Loaded(options_.workspace, user_id);
}

Result<LeaderboardSearchResult> LeaderboardService::Search(
    const LeaderboardSearchRequest& request) {
  auto shard = shards_->Get(options_.workspace, request.user_id);
  if (!shard.ok()) return shard.status();

  std::vector<std::string> terms = analyzer_->AnalyzeQuery(request.query);
  // Multiple-choice options carry words the answer turn may use; add them to the query.
  for (const auto& option : request.options) {
    auto more = analyzer_->AnalyzeQuery(option);
    terms.insert(terms.end(), more.begin(), more.end());
  }
  std::vector<float> query_vector;
  if (embedder_ != nullptr && options_.retrieval.mode != RetrievalMode::kBm25) {
    // Embedded without its question mark: the encoder puts questions near questions, whatever
    // they ask about (README: LoCoMo vector-only recall@10 .471 -> .524).
    auto v = embedder_->EmbedQuery(std::string(WithoutQuestionMark(request.query)));
    if (!v.ok()) return v.status();
    query_vector = std::move(*v);
    // Read-your-writes for vectors too: memories added just before this search are embedded
    // in the background; wait (bounded) until they are in the vector index.
    (*shard)->WaitForPendingVectors(options_.vector_wait, options_.vector_wait_max_bytes);
  }
  LeaderboardSearchResult result;
  auto hits =
      (*shard)->Search(terms, query_vector, static_cast<size_t>(request.top_k),
                       ForQuery(options_.retrieval, NamesCodeIdentifier(request.query)),
                       QueryTimeRange(request.query, request.reference_us), request.explain);
  if (rerank_.enabled()) {
    // The options of a multiple-choice question tell the reranker what to look for.
    std::string question = request.query;
    for (const auto& option : request.options) question += "\n" + option;
    rerank_.Apply(question, &hits, [](const ShardHit& h) { return std::string_view(h.doc.text); });
  }
  std::vector<std::string> wanted;
  for (auto& h : hits) {
    LeaderboardHit hit;
    hit.id = std::move(h.doc.id);
    hit.text = std::move(h.doc.text);
    hit.score = h.score;
    hit.explain = std::move(h.explain);
    hit.time_us = h.doc.time_us;
    if (const auto& shape = h.doc.shape;
        shape && (h.doc.begin > 0 || h.doc.begin + hit.text.size() < shape->bytes)) {
      hit.excerpt = LeaderboardExcerpt{.role = h.doc.role,
                                       .title = shape->title,
                                       .first_line = h.doc.first_line,
                                       .last_line = h.doc.last_line,
                                       .lines = shape->lines,
                                       .bytes = shape->bytes};
    }
    // A stored ContentPart array, its images added to those to read.
    const auto parts_of = [&wanted](const std::string& json) {
      std::vector<ContentPart> parts = PartsFromStoredJson(json);
      for (const auto& p : parts) {
        if (p.is_image) wanted.push_back(p.image_sha256);
      }
      return parts;
    };
    // An excerpt is shown from its turns, the hit's own among them.
    if (h.turns.empty() && !h.doc.parts_json.empty()) hit.parts = parts_of(h.doc.parts_json);
    for (ShardTurn& d : h.turns) {
      LeaderboardTurn turn{
          .role = std::move(d.role), .text = std::move(d.text), .time_us = d.time_us};
      if (!d.parts_json.empty()) turn.parts = parts_of(d.parts_json);
      hit.turns.push_back(std::move(turn));
    }
    result.hits.push_back(std::move(hit));
  }
  if (!wanted.empty()) {
    auto images = store_->GetImages(wanted);
    if (!images.ok()) return images.status();
    for (auto& img : *images) result.images.emplace(img.sha256, std::move(img));
  }
  return result;
}

Result<UserDeletion> LeaderboardService::DeleteUser(const std::string& user_id) {
  auto deleted = store_->DeleteLeaderboardUser(options_.workspace, user_id);
  if (!deleted.ok()) return deleted.status();
  // After the store: a search that loads the shard meanwhile reads what is left, and this drop
  // makes the next one load again.
  shards_->Drop(options_.workspace, user_id);
  spdlog::info(
      "leaderboard user deleted: {} messages, {} images, {} vectors, {} idempotency records",
      deleted->messages, deleted->images, deleted->vectors, deleted->idempotency);
  return deleted;
}

LeaderboardPurge LeaderboardService::PurgeIdleUsers(int64_t before_us, size_t max_users) {
  LeaderboardPurge purge;
  auto users = store_->LeaderboardUsersIdleSince(options_.workspace, before_us, max_users);
  if (!users.ok()) {
    purge.status = users.status();
    return purge;
  }
  for (const auto& user : *users) {
    auto deleted = DeleteUser(user);
    if (!deleted.ok()) {
      purge.status = deleted.status();
      return purge;
    }
    ++purge.users;
    purge.deleted.messages += deleted->messages;
    purge.deleted.images += deleted->images;
    purge.deleted.vectors += deleted->vectors;
    purge.deleted.idempotency += deleted->idempotency;
  }
  return purge;
}

Result<int64_t> LeaderboardService::ExpireIdempotency(int64_t before_s) {
  return store_->ExpireIdempotency(before_s);
}

}  // namespace engram
