#include "core/scope_shard.h"

#include <algorithm>
#include <functional>
#include <unordered_set>

#include "index/question_form.h"

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
    d.asks = EndsWithQuestion(d.text);
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

template <typename Fn>
void ScopeShard::ForEachNeighbour(DocId doc, const RetrievalOptions& options, Fn&& fn) const {
  DocId before = doc, after = doc;
  for (int step = 1; step <= options.neighbours; ++step) {
    if (before != kNoDoc) before = prev_[before];
    if (after != kNoDoc) after = next_[after];
    for (DocId nd : {before, after}) {
      if (nd == kNoDoc || docs_[nd].text.size() > options.neighbour_max_chars) continue;
      fn(nd, step == 1 && nd == after);
    }
  }
}

std::vector<ScoredDoc> ScopeShard::WindowedBm25(const std::vector<std::string>& terms, size_t k,
                                                float share) const {
  if (k == 0) return {};
  // Per-thread scratch reused across searches (reset after use), so a search costs what its
  // terms' postings cost, not the scope's size: each doc's own BM25 total, the docs touched,
  // each doc's row in `contrib` (kNoDoc = none) and per row its per-term contributions.
  thread_local std::vector<float> total;
  thread_local std::vector<DocId> touched;
  thread_local std::vector<uint32_t> row_of_doc;
  thread_local std::vector<DocId> doc_of_row;
  thread_local std::vector<float> contrib;
  thread_local std::vector<float> sorted_totals;
  if (total.size() < docs_.size()) total.resize(docs_.size(), 0.0f);
  if (row_of_doc.size() < docs_.size()) row_of_doc.resize(docs_.size(), kNoDoc);
  touched.clear();
  doc_of_row.clear();

  // Pass 1: own totals (plain BM25 scores).
  const size_t n_terms = bm25_.ForEachContribution(terms, [&](size_t, DocId doc, float c) {
    if (total[doc] == 0.0f) touched.push_back(doc);
    total[doc] += c;
  });
  if (touched.empty()) return {};
  auto total_of = [&](DocId d) { return d == kNoDoc ? 0.0f : total[d]; };

  // A turn's window score lies between its own total and its own total plus `share` of each
  // neighbour's total, so the k-th best own total is a floor for the k-th best window score:
  // only turns whose upper bound reaches it (usually few) need the per-term pass. Candidates are
  // the matching turns and the turns next to them (which may match through them).
  float floor = 0.0f;
  if (touched.size() > k) {
    sorted_totals.clear();
    for (DocId d : touched) sorted_totals.push_back(total[d]);
    std::nth_element(sorted_totals.begin(), sorted_totals.begin() + static_cast<long>(k - 1),
                     sorted_totals.end(), std::greater<float>());
    floor = sorted_totals[k - 1];
  }
  auto add_row = [&](DocId d) {
    if (d == kNoDoc || row_of_doc[d] != kNoDoc) return;
    row_of_doc[d] = static_cast<uint32_t>(doc_of_row.size());
    doc_of_row.push_back(d);
  };
  auto consider = [&](DocId d) {
    if (d == kNoDoc || row_of_doc[d] != kNoDoc) return;
    const float bound = total[d] + share * (total_of(prev_[d]) + total_of(next_[d]));
    if (bound < floor) return;
    add_row(d);  // the window needs the neighbours' per-term scores too
    add_row(prev_[d]);
    add_row(next_[d]);
  };
  const size_t n_touched = touched.size();
  for (size_t i = 0; i < n_touched; ++i) {
    const DocId d = touched[i];
    consider(d);
    consider(prev_[d]);
    consider(next_[d]);
  }

  // Pass 2: per-term contributions of the rows.
  contrib.assign(doc_of_row.size() * n_terms, 0.0f);
  bm25_.ForEachContribution(terms, [&](size_t t, DocId doc, float c) {
    if (row_of_doc[doc] != kNoDoc) contrib[row_of_doc[doc] * n_terms + t] = c;
  });
  auto row_of = [&](DocId d) { return d == kNoDoc ? kNoDoc : row_of_doc[d]; };
  std::vector<ScoredDoc> scored;
  scored.reserve(doc_of_row.size());
  for (uint32_t r = 0; r < doc_of_row.size(); ++r) {
    const DocId d = doc_of_row[r];
    const float bound = total[d] + share * (total_of(prev_[d]) + total_of(next_[d]));
    if (bound < floor) continue;  // a row only because it neighbours a candidate
    const uint32_t before = row_of(prev_[d]);
    const uint32_t after = row_of(next_[d]);
    const float* own = &contrib[r * n_terms];
    const float* b = before != kNoDoc ? &contrib[before * n_terms] : nullptr;
    const float* a = after != kNoDoc ? &contrib[after * n_terms] : nullptr;
    float score = 0;
    for (size_t t = 0; t < n_terms; ++t) {
      float best = own[t];
      if (b != nullptr) best = std::max(best, share * b[t]);
      if (a != nullptr) best = std::max(best, share * a[t]);
      score += best;
    }
    if (score > 0) scored.push_back({d, score});
  }
  for (DocId d : touched) total[d] = 0.0f;
  for (DocId d : doc_of_row) row_of_doc[d] = kNoDoc;
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
    // its own score and what it was lent; then everything is ranked together. `slot` maps a
    // document to its entry in `all` (per-thread scratch, reset after use, so a search does not
    // allocate a hash table: it cost ~3 % of a hybrid search's CPU).
    thread_local std::vector<uint32_t> slot;
    if (slot.size() < docs_.size()) slot.resize(docs_.size(), kNoDoc);
    std::vector<ScoredDoc> all;
    all.reserve(ranked.size() * 3);
    auto offer = [&](DocId d, float score) {
      if (slot[d] == kNoDoc) {
        slot[d] = static_cast<uint32_t>(all.size());
        all.push_back({d, score});
      } else {
        float& best = all[slot[d]].score;
        best = std::max(best, score);
      }
    };
    for (const auto& hit : ranked) {
      const bool asks =
          docs_[hit.doc].asks && docs_[hit.doc].text.size() <= options.question_max_chars;
      offer(hit.doc, asks ? hit.score * options.question_factor : hit.score);
      const float lent = hit.score * options.neighbour_score_factor;
      const float to_reply = asks ? hit.score * options.reply_score_factor : lent;
      ForEachNeighbour(hit.doc, options,
                       [&](DocId nd, bool reply) { offer(nd, reply ? to_reply : lent); });
    }
    for (const ScoredDoc& s : all) slot[s.doc] = kNoDoc;
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
    ForEachNeighbour(hit.doc, options, [&](DocId nd, bool) { take(nd, score); });
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
