#include "core/kb_service.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <chrono>
#include <functional>

#include "common/ids.h"
#include "common/time_util.h"
#include "core/paging.h"
#include "core/shard_graphs.h"
#include "core/shard_keys.h"

namespace engram {

namespace {

const char* SourceTypeName(DocSourceType t) { return t == DocSourceType::kOss ? "OSS" : "LOCAL"; }

// The source type of documents whose bytes came with the upload (stored until ingested).
constexpr std::string_view kContentSource = "CONTENT";

}  // namespace

KbService::KbService(KbStore* store, const Analyzer* analyzer, const Embedder* embedder,
                     const DocFetcher* fetcher, KbServiceOptions options)
    : store_(store),
      analyzer_(analyzer),
      embedder_(embedder),
      fetcher_(fetcher),
      options_(std::move(options)),
      clock_(options_.clock != nullptr ? options_.clock : RealClock()),
      shards_(ShardDomain::kKb, options_.budget, [this](const std::string& key) {
        KbShardOptions shard = options_.shard;
        SetShardGraph(&shard.vectors, options_.graph_dir, ShardDomain::kKb, key);
        return std::make_shared<KbShard>(analyzer_, std::move(shard));
      }) {
  if (embedder_ != nullptr) {
    options_.shard.vector_model = embedder_->model_id();
    options_.shard.vectors.dim = embedder_->dimension();
  }
}

KbService::~KbService() { Shutdown(); }

Status KbService::Start() {
  {
    MutexLock lock(&running_mu_);
    if (started_) return Status::Ok();
    started_ = true;
  }
  auto unfinished = store_->UnfinishedKbDocs();
  if (!unfinished.ok()) return unfinished.status();
  if (!unfinished->empty()) {
    spdlog::info("knowledge bases: resuming {} unfinished document(s)", unfinished->size());
  }
  for (auto& d : *unfinished) jobs_.Push(std::move(d));
  std::function<void()> poll;
  if (store_->shared()) poll = [this] { ClaimOrphanedDocs(); };
  jobs_.Start(
      {.workers = options_.workers,
       .poll_interval = options_.job_poll_interval,
       .name = "kb-docs",
       .clock = clock_},
      [this](KbDocRecord& doc) { RunJob(std::move(doc)); }, {}, std::move(poll));
  return Status::Ok();
}

void KbService::ClaimOrphanedDocs() {
  // Only documents whose ingestion lease ran out (their node died) come back from a shared store.
  auto claimed = store_->UnfinishedKbDocs();
  if (!claimed.ok()) {
    spdlog::warn("knowledge bases: claiming orphaned documents failed: {}",
                 claimed.status().ToString());
    return;
  }
  for (auto& d : *claimed) {
    spdlog::info("knowledge bases: took over the ingestion of document {} of another node", d.id);
    jobs_.Push(std::move(d));
  }
}

// Queued documents stay PROCESSING in the store and are ingested at the next start.
void KbService::Shutdown() { jobs_.Shutdown(); }

void KbService::SaveGraphs() {
  if (!options_.graph_dir.empty()) shards_.SaveGraphs();
}

size_t KbService::queued_jobs() const { return jobs_.pending(); }

Result<std::shared_ptr<KbShard>> KbService::Shard(const std::string& workspace,
                                                  const std::string& kb_id) {
  // On a shared store another node may have changed the knowledge base: a shard older than the
  // store's version is replaced by a fresh load.
  int64_t version = 0;
  if (store_->shared()) {
    auto v = store_->ScopeVersion(ScopeKeyKb(workspace, kb_id));
    if (!v.ok()) return v.status();
    version = *v;
  }
  // Held by the caller from here on: the budget does not drop a shard while it is in use.
  auto [shard, created] = shards_.Hold(KbShardKey(workspace, kb_id), version);
  Status st = shard->EnsureLoaded(store_, workspace, kb_id);
  if (!st.ok()) return st;
  shards_.Used(created);
  return shard;
}

bool KbService::KnowledgeBaseLoaded(const std::string& workspace, const std::string& kb_id) const {
  return shards_.Loaded(KbShardKey(workspace, kb_id));
}

Mutex& KbService::DocLock(const std::string& workspace, const std::string& kb_id,
                          const std::string& id) {
  const std::string key = workspace + '\x1f' + kb_id + '\x1f' + id;
  return doc_locks_[std::hash<std::string>{}(key) % kStripes];
}

Result<std::string> KbService::Upload(const KbUploadRequest& request) {
  if (!request.content) {
    ENGRAM_RETURN_IF_ERROR(fetcher_->Validate(request.type, request.file_url, request.workspace));
  }
  if (queued_jobs() >= options_.max_queued) {
    return Status(StatusCode::kThrottled,
                  "too many documents are being processed; retry after a short wait");
  }
  KbDocRecord doc;
  doc.workspace = request.workspace;
  doc.kb_id = request.kb_id;
  doc.id = request.id.empty() ? NewId("d") : request.id;
  doc.job_id = NewUuid();
  doc.title = request.title;
  doc.source_type = request.content ? std::string(kContentSource) : SourceTypeName(request.type);
  doc.file_url = request.file_url;
  if (request.content) doc.upload = *request.content;
  doc.status = JobStatus::kPending;
  doc.created_at_us = doc.updated_at_us = clock_->WallMicros();
  {
    MutexLock lock(&DocLock(doc.workspace, doc.kb_id, doc.id));
    auto shard = Shard(doc.workspace, doc.kb_id);
    if (!shard.ok()) return shard.status();
    ENGRAM_RETURN_IF_ERROR(store_->PutKbDoc(doc));
    // A re-upload replaces the old version: its chunks are gone from the store already.
    (*shard)->RemoveDoc(doc.id);
  }
  spdlog::debug("kb {}/{}: document {} queued ({})", doc.workspace, doc.kb_id, doc.id,
                doc.source_type);
  std::string id = doc.id;
  // The job reads uploaded bytes from the store when it runs: a queue of large uploads does not
  // sit in memory.
  doc.upload.clear();
  doc.upload.shrink_to_fit();
  jobs_.Push(std::move(doc));
  return id;
}

void KbService::MaskFinishing(KbDocRecord& doc) const {
  MutexLock lock(&running_mu_);
  if (finishing_.count(FinishingKey(doc.workspace, doc.kb_id, doc.id))) {
    doc.status = JobStatus::kRunning;
    doc.content.clear();
    doc.error_message.clear();
  }
}

Result<KbDocRecord> KbService::Get(const std::string& workspace, const std::string& kb_id,
                                   const std::string& id) {
  auto doc = store_->GetKbDoc(workspace, kb_id, id);
  if (doc.ok()) MaskFinishing(*doc);
  return doc;
}

Result<std::vector<KnowledgeBaseSummary>> KbService::ListKnowledgeBases(
    const std::string& workspace, size_t page_number, size_t page_size, size_t* total) {
  const size_t offset = PageOffset(page_number, page_size);
  return store_->ListKnowledgeBases(workspace, offset, page_size, total);
}

Result<std::vector<KbDocRecord>> KbService::List(const std::string& workspace,
                                                 const std::string& kb_id, size_t page_number,
                                                 size_t page_size, size_t* total) {
  const size_t offset = PageOffset(page_number, page_size);
  auto docs = store_->ListKbDocs(workspace, kb_id, offset, page_size, total);
  if (docs.ok()) {
    for (KbDocRecord& d : *docs) MaskFinishing(d);
  }
  return docs;
}

Status KbService::Delete(const std::string& workspace, const std::string& kb_id,
                         const std::string& id) {
  MutexLock lock(&DocLock(workspace, kb_id, id));
  auto shard = Shard(workspace, kb_id);
  if (!shard.ok()) return shard.status();
  auto deleted = store_->DeleteKbDoc(workspace, kb_id, id);
  if (!deleted.ok()) return deleted.status();
  if (!*deleted) {
    return Status::NotFound(fmt::format("document {} not found in knowledge base {}", id, kb_id));
  }
  (*shard)->RemoveDoc(id);
  return Status::Ok();
}

Result<std::vector<KbHit>> KbService::Search(const std::string& workspace, const std::string& kb_id,
                                             const std::string& query, size_t top_k, bool explain) {
  auto shard = Shard(workspace, kb_id);
  if (!shard.ok()) return shard.status();
  std::vector<float> vector;
  if (embedder_ != nullptr) {
    auto v = embedder_->EmbedQuery(query);
    if (v.ok()) {
      vector = std::move(*v);
    } else {
      // BM25 still answers; only this query loses its vector half.
      spdlog::warn("kb search: query embedding failed ({}); answering with BM25 only",
                   v.status().ToString());
    }
  }
  return (*shard)->Search(analyzer_->AnalyzeQuery(query), vector, top_k, explain);
}

Result<std::vector<KbChunkRecord>> KbService::Ingest(const KbDocRecord& doc, std::string* content) {
  auto fetched = [&]() -> Result<FetchedDocument> {
    if (doc.source_type == kContentSource) {
      auto bytes = store_->GetKbUpload(doc.workspace, doc.kb_id, doc.id, doc.job_id);
      if (!bytes.ok()) return bytes.status();
      return FetchedDocument{.bytes = std::move(*bytes), .name = doc.file_url};
    }
    const DocSourceType type =
        doc.source_type == "OSS" ? DocSourceType::kOss : DocSourceType::kLocal;
    return fetcher_->Fetch(type, doc.file_url, doc.workspace);
  }();
  if (!fetched.ok()) return fetched.status();
  auto doc_type = DetectDocType(fetched->bytes, fetched->name);
  if (!doc_type.ok()) return doc_type.status();
  auto text = ExtractDocumentText(*doc_type, fetched->bytes, options_.documents);
  if (!text.ok()) return text.status();
  fetched->bytes.clear();
  fetched->bytes.shrink_to_fit();

  std::vector<KbChunkRecord> chunks;
  for (DocumentChunk& c : ChunkDocument(*text, options_.chunks)) {
    KbChunkRecord r;
    r.doc_id = doc.id;
    r.title = doc.title;
    r.position = c.position;
    r.heading = std::move(c.heading);
    r.text = std::move(c.text);
    chunks.push_back(std::move(r));
  }
  if (embedder_ != nullptr) {
    const size_t batch = std::max<size_t>(1, options_.embed_batch);
    for (size_t i = 0; i < chunks.size(); i += batch) {
      std::vector<std::string> texts;
      for (size_t j = i; j < std::min(chunks.size(), i + batch); ++j) {
        // The title gives a chunk read alone its context ("Pricing" of which product?).
        texts.push_back(doc.title + "\n" + KbIndexedText(chunks[j].heading, chunks[j].text));
      }
      auto vectors = embedder_->EmbedBatch(texts);
      if (!vectors.ok()) {
        return Status(vectors.status().code(),
                      "embedding the document failed: " + vectors.status().message());
      }
      for (size_t j = 0; j < vectors->size(); ++j) {
        chunks[i + j].vector = std::move((*vectors)[j]);
        chunks[i + j].vector_model = embedder_->model_id();
      }
    }
  }
  *content = std::move(*text);
  return chunks;
}

void KbService::RunJob(KbDocRecord doc) {
  const auto start = std::chrono::steady_clock::now();
  std::string content;
  auto chunks = Ingest(doc, &content);
  KbDocRecord end = doc;
  end.updated_at_us = clock_->WallMicros();
  if (chunks.ok()) {
    end.status = JobStatus::kSucceeded;
    end.content = std::move(content);
  } else {
    end.status = JobStatus::kFailed;
    end.error_message = chunks.status().message();
  }
  static const std::vector<KbChunkRecord> kNone;
  const std::vector<KbChunkRecord>& rows = chunks.ok() ? *chunks : kNone;
  MutexLock lock(&DocLock(doc.workspace, doc.kb_id, doc.id));
  auto shard = Shard(doc.workspace, doc.kb_id);
  const std::string key = FinishingKey(doc.workspace, doc.kb_id, doc.id);
  {
    MutexLock finishing(&running_mu_);
    finishing_.insert(key);
  }
  struct Done {
    KbService* self;
    const std::string& key;
    ~Done() {
      MutexLock finishing(&self->running_mu_);
      self->finishing_.erase(key);
    }
  } done{this, key};
  const std::vector<KbChunkRecord>* stored = &rows;
  auto applied = store_->FinishKbDoc(end, *stored);
  if (!applied.ok() && applied.status().code() == StatusCode::kInvalidParameter &&
      end.status == JobStatus::kSucceeded) {
    // The store cannot hold what was extracted (PostgreSQL text has no NUL character): the
    // document fails rather than being ingested again after every pause.
    spdlog::warn("kb {}/{}: document {} refused by the store ({}); recording it as failed",
                 doc.workspace, doc.kb_id, doc.id, ApiCodeOf(applied.status().code()));
    end.status = JobStatus::kFailed;
    end.content.clear();
    end.error_message = applied.status().message();
    stored = &kNone;
    applied = store_->FinishKbDoc(end, *stored);
  }
  if (!applied.ok()) {
    spdlog::error("kb {}/{}: document {} could not be stored: {}", doc.workspace, doc.kb_id, doc.id,
                  applied.status().ToString());
    // A refused end would be refused again: it stays PROCESSING until the next start.
    if (applied.status().code() != StatusCode::kInvalidParameter) RetryLater(std::move(doc));
    return;
  }
  const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                      std::chrono::steady_clock::now() - start)
                      .count();
  if (!*applied) {
    spdlog::info("kb {}/{}: document {} was deleted or uploaded again during ingestion",
                 doc.workspace, doc.kb_id, doc.id);
    return;
  }
  if (shard.ok() && end.status == JobStatus::kSucceeded) (*shard)->ReplaceDoc(doc.id, *stored);
  spdlog::info("kb {}/{}: document {} {} in {} ms ({} chunks, {} bytes of text)", doc.workspace,
               doc.kb_id, doc.id, JobStatusName(end.status, JobVocabulary::kKbDocument), ms,
               stored->size(), end.content.size());
}

void KbService::RetryLater(KbDocRecord doc) {
  // This node holds the document's ingestion lease and keeps renewing it, so no other node takes
  // it over and no restart is coming: unless it is queued again here, a passing store error (a
  // dropped connection, a full disk) would leave it PROCESSING for good. The pause keeps an
  // outage of the store from becoming a busy loop, without holding a worker. The retry ingests
  // the document again; its job_id still guards the end against a delete or a new upload
  // meanwhile. Shutdown drops the queued copy, and the next start resumes it from the store.
  const auto pause = jobs_.retry_pause();
  spdlog::debug("kb {}/{}: document {} ingested again in {} ms", doc.workspace, doc.kb_id, doc.id,
                pause.count());
  jobs_.PushAfter(std::move(doc), pause);
}

}  // namespace engram
