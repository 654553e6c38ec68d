#include "core/leaderboard_service.h"

#include <spdlog/spdlog.h>

#include <nlohmann/json.hpp>

#include "common/ids.h"
#include "common/time_util.h"
#include "extract/ocr/image_text.h"
#include "index/question_form.h"

namespace engram {

namespace {

// Appends the text OCR reads in the message's images to *text. `cache` holds this request's
// results by image hash (an image sent twice is read once). Unreadable images add nothing.
void AppendImageText(const ImageTextExtractor& ocr, const LeaderboardMessage& msg,
                     const std::vector<ImageBlob>& images, std::map<std::string, std::string>* cache,
                     std::string* text) {
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
  auto arr = nlohmann::json::parse(json, nullptr, /*allow_exceptions=*/false);
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

LeaderboardService::LeaderboardService(Store* store, ShardRegistry* shards,
                                       const Analyzer* analyzer, const Embedder* embedder,
                                       VectorBackfill* vectors, LeaderboardOptions options)
    : store_(store), shards_(shards), analyzer_(analyzer), embedder_(embedder), vectors_(vectors),
      options_(std::move(options)) {}

Result<std::string> LeaderboardService::Add(const LeaderboardAddRequest& request) {
  const std::string key = "leaderboard:" + request.request_id;
  for (;;) {
    std::promise<Result<std::string>> promise;
    std::shared_future<Result<std::string>> waiting;
    std::string waiting_hash;
    {
      std::lock_guard<std::mutex> lock(inflight_mu_);
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
    Result<std::string> result = DoAdd(request, key);
    promise.set_value(result);
    {
      std::lock_guard<std::mutex> lock(inflight_mu_);
      inflight_.erase(key);
    }
    return result;
  }
}

Result<std::string> LeaderboardService::DoAdd(const LeaderboardAddRequest& request,
                                              const std::string& key) {
  const int64_t now = NowMicros();
  AddBatch batch;
  batch.idempotency = IdempotencyRecord{key, request.body_hash, request.response_json};
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
    if (msg.content_is_parts) m.parts_json = PartsToStoredJson(msg.parts);
    if (msg.timestamp_ms) m.source_ts_us = *msg.timestamp_ms * 1000;
    m.position = static_cast<int32_t>(i);
    m.created_at_us = m.updated_at_us = now;
    batch.memories.push_back(std::move(m));
  }
  // Without a background queue, vectors are computed before the write and commit with it.
  if (embedder_ != nullptr && vectors_ == nullptr) {
    std::vector<std::string> texts;
    texts.reserve(batch.memories.size());
    for (const auto& m : batch.memories) texts.push_back(m.text);
    auto vectors = embedder_->EmbedBatch(texts);
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
  auto outcome = store_->Add(std::move(batch));
  if (!outcome.ok()) return outcome.status();
  if (outcome->duplicate) {
    if (outcome->existing.body_hash != request.body_hash) {
      return Status::Conflict("request_id " + request.request_id +
                              " was already used with a different body");
    }
    return outcome->existing.response_json;
  }
  // Searchable before we answer: the very next search must see this write.
  (*shard)->Apply(outcome->stored);
  if (embedder_ != nullptr && vectors_ != nullptr) {
    std::vector<std::pair<int64_t, std::string>> items;
    items.reserve(outcome->stored.size());
    for (const auto& m : outcome->stored) items.emplace_back(m.seq, m.text);
    vectors_->EnqueueFresh(*shard, std::move(items));
  }
  return request.response_json;
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
    auto v = embedder_->Embed(std::string(WithoutQuestionMark(request.query)));
    if (!v.ok()) return v.status();
    query_vector = std::move(*v);
    // Read-your-writes for vectors too: memories added just before this search are embedded
    // in the background; wait (bounded) until they are in the vector index.
    (*shard)->WaitForPendingVectors(options_.vector_wait, options_.vector_wait_max_bytes);
  }
  LeaderboardSearchResult result;
  auto hits = (*shard)->Search(terms, query_vector, static_cast<size_t>(request.top_k),
                               options_.retrieval, ParseQueryDates(request.query));
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
    hit.time_us = h.doc.time_us;
    if (!h.doc.parts_json.empty()) {
      hit.parts = PartsFromStoredJson(h.doc.parts_json);
      for (const auto& p : hit.parts) {
        if (p.is_image) wanted.push_back(p.image_sha256);
      }
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

}  // namespace engram
