#include "core/scope_shard.h"

#include <algorithm>
#include <functional>
#include <unordered_set>

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
      bm25_(options_.bm25),
      vectors_(options_.vectors) {}

Status ScopeShard::EnsureLoaded(Store* store, std::string_view workspace,
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

Status ScopeShard::Refresh(Store* store, std::string_view workspace, std::string_view user_id) {
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
    if (auto present = by_id_.find(r.id); present != by_id_.end()) {
      if (!r.vector.empty() && r.vector_model == options_.vector_model &&
          static_cast<int>(r.vector.size()) == vectors_.dim()) {
        vectors_.Set(present->second, r.vector.data());
      }
      continue;
    }
    auto doc_id = static_cast<DocId>(docs_.size());
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
    docs_.push_back(std::move(d));
    by_id_.emplace(r.id, doc_id);
    by_seq_.emplace(r.seq, doc_id);
    bm25_.Add(doc_id, terms[i]);
    if (!r.vector.empty() && r.vector_model == options_.vector_model &&
        static_cast<int>(r.vector.size()) == vectors_.dim()) {
      vectors_.Set(doc_id, r.vector.data());
    }
    // Chunks of one conversation may arrive out of order: insert at the turn's place.
    auto& turns = sessions_[r.session_id];
    auto at = std::upper_bound(turns.begin(), turns.end(), doc_id,
                               [this](DocId a, DocId b) { return TurnBefore(a, b); });
    const DocId before = at == turns.begin() ? kNoDoc : *(at - 1);
    const DocId after = at == turns.end() ? kNoDoc : *at;
    turns.insert(at, doc_id);
    prev_.push_back(before);
    next_.push_back(after);
    if (before != kNoDoc) next_[before] = doc_id;
    if (after != kNoDoc) prev_[after] = doc_id;
  }
}

void ScopeShard::ApplyVectors(const std::vector<VectorUpdate>& updates) {
  std::unique_lock<std::shared_mutex> lock(mu_);
  for (const auto& u : updates) {
    auto it = by_seq_.find(u.seq);
    if (it == by_seq_.end() || u.model != options_.vector_model ||
        static_cast<int>(u.vector.size()) != vectors_.dim()) {
      continue;
    }
    vectors_.Set(it->second, u.vector.data());
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
    if (!vectors_.Contains(d)) out.emplace_back(docs_[d].seq, docs_[d].text);
  }
  return out;
}

void ScopeShard::ForEachNeighbour(DocId doc, const RetrievalOptions& options,
                                  const std::function<void(DocId)>& fn) const {
  DocId before = doc, after = doc;
  for (int step = 1; step <= options.neighbours; ++step) {
    if (before != kNoDoc) before = prev_[before];
    if (after != kNoDoc) after = next_[after];
    for (DocId nd : {before, after}) {
      if (nd == kNoDoc || docs_[nd].text.size() > options.neighbour_max_chars) continue;
      fn(nd);
    }
  }
}

std::vector<ScoredDoc> ScopeShard::WindowedBm25(const std::vector<std::string>& terms, size_t k,
                                                float share) const {
  struct Entry {
    uint32_t term;
    DocId doc;
    float score;
  };
  std::vector<Entry> entries;
  const size_t n_terms = bm25_.ForEachContribution(terms, [&](size_t t, DocId doc, float c) {
    entries.push_back({static_cast<uint32_t>(t), doc, c});
  });
  if (entries.empty()) return {};
  // One row of per-term contributions per matching doc.
  std::unordered_map<DocId, uint32_t> row;
  row.reserve(entries.size());
  for (const Entry& e : entries) row.emplace(e.doc, static_cast<uint32_t>(row.size()));
  std::vector<float> contrib(row.size() * n_terms, 0.0f);
  for (const Entry& e : entries) contrib[row[e.doc] * n_terms + e.term] = e.score;
  auto row_of = [&](DocId d) -> const float* {
    if (d == kNoDoc) return nullptr;
    auto it = row.find(d);
    return it == row.end() ? nullptr : &contrib[it->second * n_terms];
  };
  // Candidates: matching turns and the turns next to them (which may match through them).
  std::vector<DocId> candidates;
  candidates.reserve(row.size() * 2);
  for (const auto& [doc, unused] : row) {
    candidates.push_back(doc);
    for (DocId nd : {prev_[doc], next_[doc]}) {
      if (nd != kNoDoc && row.find(nd) == row.end()) candidates.push_back(nd);
    }
  }
  std::sort(candidates.begin(), candidates.end());
  candidates.erase(std::unique(candidates.begin(), candidates.end()), candidates.end());
  std::vector<ScoredDoc> scored;
  scored.reserve(candidates.size());
  for (DocId d : candidates) {
    const float* own = row_of(d);
    const float* before = row_of(prev_[d]);
    const float* after = row_of(next_[d]);
    float score = 0;
    for (size_t t = 0; t < n_terms; ++t) {
      float best = own != nullptr ? own[t] : 0.0f;
      if (before != nullptr) best = std::max(best, share * before[t]);
      if (after != nullptr) best = std::max(best, share * after[t]);
      score += best;
    }
    scored.push_back({d, score});
  }
  KeepTopK(scored, k);
  return scored;
}

float ScopeShard::DateCloseness(DocId doc, const TimeRange& range,
                                const RetrievalOptions& options) const {
  constexpr double kDay = 86400.0 * 1e6;
  const int64_t t = docs_[doc].time_us;
  if (t >= range.begin_us && t < range.end_us) return 1.0f;
  const double days = t < range.begin_us ? (range.begin_us - t) / kDay : (t - range.end_us) / kDay;
  const int fade = t < range.begin_us ? options.time_days_before : options.time_days_after;
  if (fade <= 0 || days >= fade) return 0.0f;
  return static_cast<float>(1.0 - days / fade);
}

std::vector<ScoredDoc> ScopeShard::WithNeighbours(const std::vector<ScoredDoc>& ranked, size_t k,
                                                  const RetrievalOptions& options) const {
  if (options.neighbours > 0 &&
      options.neighbour_placement == RetrievalOptions::NeighbourPlacement::kByScore) {
    // Every candidate lends factor × its score to its neighbours; each document keeps the best of
    // its own score and what it was lent; then everything is ranked together.
    std::unordered_map<DocId, float> best;
    best.reserve(ranked.size() * 3);
    auto offer = [&best](DocId d, float score) {
      auto [it, fresh] = best.emplace(d, score);
      if (!fresh) it->second = std::max(it->second, score);
    };
    for (const auto& hit : ranked) {
      offer(hit.doc, hit.score);
      const float lent = hit.score * options.neighbour_score_factor;
      ForEachNeighbour(hit.doc, options, [&](DocId nd) { offer(nd, lent); });
    }
    std::vector<ScoredDoc> all;
    all.reserve(best.size());
    for (const auto& [doc, score] : best) all.push_back({doc, score});
    KeepTopK(all, k);
    return all;
  }
  std::vector<ScoredDoc> out;
  out.reserve(k);
  std::unordered_set<DocId> taken;
  // Scores stay non-increasing in rank order: a neighbour placed after its hit never shows a
  // higher score than what comes before it.
  auto take = [&](DocId d, float score) {
    if (out.size() >= k || !taken.insert(d).second) return;
    if (!out.empty()) score = std::min(score, out.back().score);
    out.push_back({d, score});
  };
  for (const auto& hit : ranked) {
    if (out.size() >= k) break;
    take(hit.doc, hit.score);
    if (options.neighbours <= 0) continue;
    const float score = hit.score * options.neighbour_score_factor;
    ForEachNeighbour(hit.doc, options, [&](DocId nd) { take(nd, score); });
  }
  return out;
}

std::vector<ShardHit> ScopeShard::Search(const std::vector<std::string>& terms,
                                         const std::vector<float>& query_vector, size_t k,
                                         const RetrievalOptions& options,
                                         const std::optional<TimeRange>& dates) const {
  std::shared_lock<std::shared_mutex> lock(mu_);
  const size_t candidates = std::max(k, options.candidates);
  std::vector<ScoredDoc> lexical, semantic;
  const bool use_vectors = !query_vector.empty() && options.mode != RetrievalMode::kBm25 &&
                           static_cast<int>(query_vector.size()) == vectors_.dim();
  if (options.mode != RetrievalMode::kVector) {
    lexical = options.window_share > 0 ? WindowedBm25(terms, candidates, options.window_share)
                                       : bm25_.Search(terms, candidates);
  }
  if (use_vectors) semantic = vectors_.Search(query_vector.data(), candidates);

  FusionOptions fusion = options.fusion;
  if (options.mode == RetrievalMode::kBm25 || !use_vectors) fusion.vector_weight = 0;
  if (options.mode == RetrievalMode::kVector) fusion.vector_weight = 1;
  std::function<float(DocId)> closeness;
  if (dates && options.time_weight > 0) {
    fusion.prior_weight = options.time_weight;
    closeness = [&](DocId d) { return DateCloseness(d, *dates, options); };
  }
  auto fused = Fuse(lexical, semantic, candidates, fusion, closeness ? &closeness : nullptr);
  auto ranked = WithNeighbours(fused, k, options);

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
  size_t bytes = bm25_.MemoryBytes() + vectors_.MemoryBytes();
  for (const auto& d : docs_) {
    bytes += sizeof(ShardDoc) + d.id.capacity() + d.text.capacity() + d.parts_json.capacity() +
             d.session_id.capacity() + d.role.capacity();
  }
  bytes += by_id_.size() * 64 + by_seq_.size() * 32 + sessions_.size() * 64 + docs_.size() * 12;
  return bytes;
}

}  // namespace engram
