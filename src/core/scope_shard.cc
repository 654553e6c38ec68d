#include "core/scope_shard.h"

#include <algorithm>
#include <functional>

#include "core/conversation_ranking.h"
#include "index/question_form.h"
#include "index/windowed_bm25.h"

namespace engram {

bool ParseRetrievalMode(const std::string& text, RetrievalMode* mode) {
  if (text == "hybrid") {
    *mode = RetrievalMode::kHybrid;
  } else if (text == "bm25") {
    *mode = RetrievalMode::kBm25;
  } else if (text == "vector") {
    *mode = RetrievalMode::kVector;
  } else {
    return false;
  }
  return true;
}

ScopeShard::ScopeShard(const Analyzer* analyzer, ShardOptions options)
    : analyzer_(analyzer),
      options_(std::move(options)),
      index_(HybridIndexOptions{.bm25 = options_.bm25,
                                .vectors = options_.vectors,
                                .vector_model = options_.vector_model}) {}

Status ScopeShard::EnsureLoaded(MessageStore* store, std::string_view workspace,
                                std::string_view user_id) {
  std::lock_guard<std::mutex> lock(load_mu_);
  if (loaded_) return Status::Ok();
  // The version is read before the rows: rows written in between come again with the next
  // refresh, and applying them twice is harmless.
  int64_t version = 0;
  if (store->shared()) {
    auto v = store->ScopeVersion(ScopeKeyMessages(workspace, user_id));
    if (!v.ok()) return v.status();
    version = *v;
  }
  auto records = store->LoadScope(workspace, user_id);
  if (!records.ok()) return records.status();
  Apply(*records);
  version_ = version;
  loaded_ = true;
  return Status::Ok();
}

Status ScopeShard::Refresh(MessageStore* store, std::string_view workspace,
                           std::string_view user_id) {
  if (!store->shared()) return Status::Ok();
  auto current = store->ScopeVersion(ScopeKeyMessages(workspace, user_id));
  if (!current.ok()) return current.status();
  std::lock_guard<std::mutex> lock(load_mu_);
  if (!loaded_ || *current <= version_) return Status::Ok();
  auto delta = store->LoadScopeSince(workspace, user_id, version_);
  if (!delta.ok()) return delta.status();
  Apply(delta->upserts);
  version_ = std::max(version_, delta->version);
  return Status::Ok();
}

void ScopeShard::Apply(const std::vector<MemoryRecord>& records) {
  // Analysis is the expensive part: do it before taking the writer lock so searches keep running.
  std::vector<std::vector<std::string>> terms;
  terms.reserve(records.size());
  for (const auto& r : records) terms.push_back(analyzer_->Analyze(r.text));
  std::unique_lock<std::shared_mutex> lock(mu_);
  ApplyLocked(records, terms);
}

bool ScopeShard::TurnBefore(DocId a, DocId b) const {
  const ShardDoc& x = docs_[a];
  const ShardDoc& y = docs_[b];
  if (x.time_us != y.time_us) return x.time_us < y.time_us;
  return x.seq < y.seq;
}

void ScopeShard::ApplyLocked(const std::vector<MemoryRecord>& records,
                             const std::vector<std::vector<std::string>>& terms) {
  for (size_t i = 0; i < records.size(); ++i) {
    const MemoryRecord& r = records[i];
    if (const std::optional<DocId> present = index_.Find(r.id)) {
      index_.SetVector(*present, r.vector_model, r.vector);
      continue;
    }
    const DocId slot = index_.Upsert(
        r.id,
        HybridDoc{
            .terms = &terms[i], .vector = r.vector, .vector_model = r.vector_model, .seq = r.seq});
    ShardDoc d;
    d.id = r.id;
    d.seq = r.seq;
    d.text = r.text;
    d.parts_json = r.parts_json;
    d.session_id = r.session_id;
    d.role = r.role;
    d.has_source_time = r.source_ts_us.has_value();
    d.time_us = r.source_ts_us.value_or(r.created_at_us);
    d.position = r.position;
    d.asks = EndsWithQuestion(d.text);
    if (docs_.size() < index_.slot_count()) docs_.resize(index_.slot_count());
    docs_[slot] = std::move(d);
    // Chunks of one conversation may arrive out of order: the turn goes to its place.
    turns_.Insert(slot, r.session_id, [this](DocId a, DocId b) { return TurnBefore(a, b); });
  }
}

void ScopeShard::ApplyVectors(const std::vector<VectorUpdate>& updates) {
  std::unique_lock<std::shared_mutex> lock(mu_);
  for (const auto& u : updates) {
    if (const std::optional<DocId> d = index_.FindSeq(u.seq))
      index_.SetVector(*d, u.model, u.vector);
  }
}

void ScopeShard::AddPendingVectors(size_t n, size_t bytes) {
  std::lock_guard<std::mutex> lock(pending_mu_);
  pending_vectors_ += n;
  pending_bytes_ += bytes;
}

void ScopeShard::DonePendingVectors(size_t n, size_t bytes) {
  {
    std::lock_guard<std::mutex> lock(pending_mu_);
    pending_vectors_ -= std::min(n, pending_vectors_);
    pending_bytes_ -= std::min(bytes, pending_bytes_);
  }
  pending_cv_.notify_all();
}

bool ScopeShard::WaitForPendingVectors(std::chrono::milliseconds timeout, size_t max_bytes) const {
  std::unique_lock<std::mutex> lock(pending_mu_);
  if (pending_bytes_ > max_bytes) return pending_vectors_ == 0;
  return pending_cv_.wait_for(lock, timeout, [this] { return pending_vectors_ == 0; });
}

std::vector<std::pair<int64_t, std::string>> ScopeShard::MissingVectors() const {
  std::shared_lock<std::shared_mutex> lock(mu_);
  std::vector<std::pair<int64_t, std::string>> out;
  for (DocId d = 0; d < docs_.size(); ++d) {
    if (!index_.HasVector(d)) out.emplace_back(docs_[d].seq, docs_[d].text);
  }
  return out;
}

std::vector<ShardHit> ScopeShard::Search(const std::vector<std::string>& terms,
                                         const std::vector<float>& query_vector, size_t k,
                                         const RetrievalOptions& options,
                                         const std::optional<TimeRange>& dates) const {
  std::shared_lock<std::shared_mutex> lock(mu_);
  const size_t candidates = std::max(k, options.candidates);
  const bool use_vectors = !query_vector.empty() && options.mode != RetrievalMode::kBm25 &&
                           static_cast<int>(query_vector.size()) == index_.dim();
  HybridQuery query;
  query.terms = &terms;
  query.k = candidates;  // neighbours and the question factor pick the k from these
  query.candidates = candidates;
  query.use_bm25 = options.mode != RetrievalMode::kVector;
  if (use_vectors) query.vector = query_vector;
  std::vector<ScoredDoc> windows;
  if (query.use_bm25 && options.window_share > 0) {
    windows = WindowedBm25(index_.bm25(), turns_, index_.slot_count(), terms, candidates,
                           options.window_share);
    query.lexical = &windows;
  }
  query.fusion = options.fusion;
  // Without a query vector there is no cosine to check: BM25 alone returns only matched turns.
  if (use_vectors) query.relevance_floor = options.relevance_floor;
  if (options.mode == RetrievalMode::kBm25 || !use_vectors) query.fusion.vector_weight = 0;
  if (options.mode == RetrievalMode::kVector) query.fusion.vector_weight = 1;
  std::function<float(DocId)> closeness;
  if (dates && options.time_weight > 0) {
    query.fusion.prior_weight = options.time_weight;
    closeness = [&](DocId d) { return DateCloseness(docs_[d].time_us, *dates, options); };
    query.prior = &closeness;
  }
  const std::vector<ScoredDoc> fused = index_.Search(query).ranked;
  const std::function<TurnFacts(DocId)> facts = [this](DocId d) {
    return TurnFacts{docs_[d].text.size(), docs_[d].asks};
  };
  auto ranked = WithNeighbours(fused, k, options, turns_, docs_.size(), facts);

  std::vector<ShardHit> hits;
  hits.reserve(ranked.size());
  for (const auto& s : ranked) hits.push_back({docs_[s.doc], s.score});
  return hits;
}

size_t ScopeShard::size() const {
  std::shared_lock<std::shared_mutex> lock(mu_);
  return docs_.size();
}

size_t ScopeShard::MemoryBytes() const {
  std::shared_lock<std::shared_mutex> lock(mu_);
  size_t bytes = index_.MemoryBytes() + turns_.MemoryBytes();
  for (const auto& d : docs_) {
    bytes += sizeof(ShardDoc) + d.id.capacity() + d.text.capacity() + d.parts_json.capacity() +
             d.session_id.capacity() + d.role.capacity();
  }
  return bytes;
}

}  // namespace engram
