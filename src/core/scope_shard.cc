#include "core/scope_shard.h"

#include <algorithm>
#include <functional>
#include <unordered_map>

#include "common/heap_release.h"
#include "common/utf8.h"
#include "core/conversation_excerpts.h"
#include "core/conversation_ranking.h"
#include "core/passage_vectors.h"
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
  ReleaseHeapOnExit release;  // once the records below are freed
  MutexLock lock(&load_mu_);
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
  release.Held(records->size());
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
  MutexLock lock(&load_mu_);
  if (!loaded_ || *current <= version_) return Status::Ok();
  auto delta = store->LoadScopeSince(workspace, user_id, version_);
  if (!delta.ok()) return delta.status();
  Apply(delta->upserts);
  version_ = std::max(version_, delta->version);
  return Status::Ok();
}

void ScopeShard::Apply(const std::vector<MemoryRecord>& records) {
  // Analysis is the expensive part: do it before taking the writer lock so searches keep running.
  std::vector<Prepared> prepared(records.size());
  for (size_t i = 0; i < records.size(); ++i) {
    const std::string& text = records[i].text;
    Prepared& p = prepared[i];
    p.spans = SplitPassages(text);
    p.terms.reserve(p.spans.size());
    for (const PassageSpan& span : p.spans) {
      p.terms.push_back(analyzer_->Analyze(std::string_view(text).substr(span.begin, span.size())));
    }
  }
  WriterLock lock(&mu_);
  ApplyLocked(records, prepared);
}

bool ScopeShard::TurnBefore(const std::vector<ShardDoc>& docs, DocId a, DocId b) {
  const ShardDoc& x = docs[a];
  const ShardDoc& y = docs[b];
  if (x.time_us != y.time_us) return x.time_us < y.time_us;
  if (x.seq != y.seq) return x.seq < y.seq;
  return x.passage < y.passage;
}

namespace {

size_t CountLines(std::string_view text) {
  return static_cast<size_t>(std::count(text.begin(), text.end(), '\n'));
}

std::shared_ptr<const MessageShape> ShapeOf(std::string_view text, size_t passages) {
  auto shape = std::make_shared<MessageShape>();
  shape->title = MessageTitle(text);
  shape->passages = static_cast<uint32_t>(passages);
  const size_t newlines = CountLines(text);
  shape->lines = static_cast<uint32_t>(newlines + (text.empty() || text.back() == '\n' ? 0 : 1));
  shape->bytes = static_cast<uint32_t>(text.size());
  return shape;
}

}  // namespace

void ScopeShard::ApplyLocked(const std::vector<MemoryRecord>& records,
                             const std::vector<Prepared>& prepared) {
  HybridIndex::Batch batch(&index_);
  for (size_t i = 0; i < records.size(); ++i) {
    const MemoryRecord& r = records[i];
    if (const std::optional<DocId> present = index_.Find(r.id)) {
      SetMessageVectorsLocked(*present, r.vector_model, r.vector);
      continue;
    }
    const std::vector<PassageSpan>& spans = prepared[i].spans;
    const size_t n = spans.size();
    std::shared_ptr<const MessageShape> shape;
    if (n > 1) {
      shape = ShapeOf(r.text, n);
      has_passages_ = true;
    }
    uint32_t line = 1;
    for (size_t j = 0; j < n; ++j) {
      const PassageSpan span = spans[j];
      HybridDoc doc{.terms = &prepared[i].terms[j],
                    .vector = n == 1 ? std::span<const float>(r.vector)
                                     : PassageVector(r.vector, n, j, index_.dim()),
                    .vector_model = r.vector_model};
      DocId slot;
      if (j == 0) {
        doc.seq = r.seq;
        slot = index_.Upsert(r.id, doc);
      } else {
        // Slots are never reused in this index, so a message's passages are consecutive.
        slot = index_.Add(doc);
      }
      ShardDoc d;
      d.id = r.id;
      d.seq = r.seq;
      d.text = n == 1 ? r.text : r.text.substr(span.begin, span.size());
      if (j == 0) d.parts_json = r.parts_json;  // the first passage's, for the whole message
      d.session_id = r.session_id;
      d.role = r.role;
      d.has_source_time = r.source_ts_us.has_value();
      d.time_us = r.source_ts_us.value_or(r.created_at_us);
      d.position = r.position;
      d.asks = EndsWithQuestion(d.text);
      if (shape) {
        d.shape = shape;
        d.passage = static_cast<uint32_t>(j);
        d.begin = span.begin;
        const auto newlines = static_cast<uint32_t>(CountLines(d.text));
        d.first_line = line;
        d.last_line = line + newlines - (!d.text.empty() && d.text.back() == '\n' ? 1 : 0);
        line += newlines;
      }
      if (docs_.size() < index_.slot_count()) {
        docs_.resize(index_.slot_count());
        facts_.resize(index_.slot_count());
      }
      facts_[slot] = {static_cast<uint32_t>(std::min<size_t>(d.text.size(), UINT32_MAX)), d.asks};
      docs_[slot] = std::move(d);
      // Chunks of one conversation may arrive out of order: the turn goes to its place.
      turns_.Insert(slot, r.session_id,
                    [docs = &docs_](DocId a, DocId b) { return TurnBefore(*docs, a, b); });
    }
    ++messages_;
  }
}

void ScopeShard::SetMessageVectorsLocked(DocId first, std::string_view model,
                                         std::span<const float> stored) {
  const ShardDoc& d = docs_[first];
  if (!d.shape) {
    index_.SetVector(first, model, stored);
    return;
  }
  const size_t n = d.shape->passages;
  for (size_t j = 0; j < n; ++j) {
    const std::span<const float> v = PassageVector(stored, n, j, index_.dim());
    if (!v.empty()) index_.SetVector(first + static_cast<DocId>(j), model, v);
  }
}

void ScopeShard::ApplyVectors(const std::vector<VectorUpdate>& updates) {
  WriterLock lock(&mu_);
  HybridIndex::Batch batch(&index_);
  for (const auto& u : updates) {
    if (const std::optional<DocId> d = index_.FindSeq(u.seq))
      SetMessageVectorsLocked(*d, u.model, u.vector);
  }
}

void ScopeShard::AddPendingVectors(size_t n, size_t bytes) {
  MutexLock lock(&pending_mu_);
  pending_vectors_ += n;
  pending_bytes_ += bytes;
}

void ScopeShard::DonePendingVectors(size_t n, size_t bytes) {
  {
    MutexLock lock(&pending_mu_);
    pending_vectors_ -= std::min(n, pending_vectors_);
    pending_bytes_ -= std::min(bytes, pending_bytes_);
  }
  pending_cv_.SignalAll();
}

bool ScopeShard::WaitForPendingVectors(std::chrono::milliseconds timeout, size_t max_bytes) const {
  MutexLock lock(&pending_mu_);
  if (pending_bytes_ > max_bytes) return pending_vectors_ == 0;
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (pending_vectors_ != 0) {
    if (!pending_cv_.WaitUntil(&pending_mu_, deadline)) break;
  }
  return pending_vectors_ == 0;
}

std::vector<std::pair<int64_t, std::string>> ScopeShard::MissingVectors() const {
  ReaderLock lock(&mu_);
  std::vector<std::pair<int64_t, std::string>> out;
  for (DocId d = 0; d < docs_.size(); ++d) {
    const ShardDoc& doc = docs_[d];
    // A message's passages get their vectors together, in one stored vector.
    if (doc.passage != 0 || index_.HasVector(d)) continue;
    if (!doc.shape) {
      out.emplace_back(doc.seq, doc.text);
      continue;
    }
    std::string text;
    text.reserve(doc.shape->bytes);
    for (DocId p = d; p < d + doc.shape->passages; ++p) text += docs_[p].text;
    out.emplace_back(doc.seq, std::move(text));
  }
  return out;
}

std::vector<ShardHit> ScopeShard::Search(const std::vector<std::string>& terms,
                                         const std::vector<float>& query_vector, size_t k,
                                         const RetrievalOptions& options,
                                         const std::optional<TimeRange>& dates,
                                         bool explain) const {
  ReaderLock lock(&mu_);
  // The lambdas below run under this lock; they reach docs_ and facts_ through pointers because
  // the analysis checks a lambda as a function of its own.
  const std::vector<ShardDoc>* docs = &docs_;
  const bool excerpts = options.excerpts && !has_passages_;
  // An excerpt shows up to 1 + turns_before + turns_after turns, so k excerpts can absorb that
  // many ranked turns: fewer candidates run out before k results.
  const size_t per_result =
      excerpts ? 1 + options.excerpt.turns_before + options.excerpt.turns_after : 1;
  const size_t candidates = std::max(k * per_result, options.candidates);
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
    closeness = [&](DocId d) { return DateCloseness((*docs)[d].time_us, *dates, options); };
    query.prior = &closeness;
  }
  query.explain = explain;
  const HybridHits found = index_.Search(query);
  const std::vector<ScoredDoc>& fused = found.ranked;
  const HybridHits* explained = explain ? &found : nullptr;
  const std::function<TurnFacts(DocId)> facts = [packed = &facts_](DocId d) {
    return TurnFacts{(*packed)[d].chars, (*packed)[d].asks};
  };
  // Passages of one message merge into one result, and a hit that an earlier excerpt shows adds
  // none: ask for more, so k results remain.
  const size_t wanted = has_passages_ ? 2 * k : excerpts ? candidates : k;
  auto ranked = WithNeighbours(fused, wanted, options, turns_, docs_.size(), facts);
  if (has_passages_) {
    // Which part of a message to show is chosen by the query's words, as a snippet is: the
    // lexical ranking (conversation windows, else plain BM25) names each message's best passage.
    std::vector<ScoredDoc> plain;
    if (windows.empty() && query.use_bm25) plain = index_.bm25().Search(terms, candidates);
    return ExcerptsLocked(ranked, windows.empty() ? plain : windows, k, explained,
                          query.fusion.method);
  }

  std::vector<ShardHit> hits;
  if (!excerpts) {
    hits.reserve(ranked.size());
    for (const auto& s : ranked) {
      hits.push_back({docs_[s.doc], s.score});
      if (explained) hits.back().explain = Explain(found, s.doc, query.fusion.method, s.score);
    }
    return hits;
  }
  const auto bytes = [packed = &facts_](DocId d) { return size_t{(*packed)[d].chars}; };
  for (ConversationExcerpt& e : AssembleExcerpts(ranked, k, turns_, bytes, options.excerpt)) {
    ShardHit hit{docs_[e.turns[e.anchor]], e.score};
    if (explained) hit.explain = Explain(found, e.turns[e.anchor], query.fusion.method, e.score);
    if (e.turns.size() > 1) {
      hit.anchor = e.anchor;
      hit.turns.reserve(e.turns.size());
      for (DocId t : e.turns) {
        const ShardDoc& d = docs_[t];
        hit.turns.push_back({d.role, d.text, d.parts_json, d.time_us});
      }
    }
    hits.push_back(std::move(hit));
  }
  return hits;
}

std::vector<ShardHit> ScopeShard::ExcerptsLocked(const std::vector<ScoredDoc>& ranked,
                                                 const std::vector<ScoredDoc>& lexical, size_t k,
                                                 const HybridHits* explained,
                                                 FusionMethod method) const {
  // The answer's messages, in the order of their best passage, with their ranked passages.
  struct Excerpt {
    DocId first;
    float score;
    std::vector<uint32_t> passages;  // ranked passages of the message, best first
  };
  std::vector<Excerpt> excerpts;
  std::unordered_map<DocId, size_t> of_message;  // first passage -> excerpts index
  for (const ScoredDoc& s : ranked) {
    const ShardDoc& d = docs_[s.doc];
    const DocId first = s.doc - d.passage;
    auto found = of_message.find(first);
    if (found == of_message.end()) {
      if (excerpts.size() == k) continue;
      found = of_message.emplace(first, excerpts.size()).first;
      excerpts.push_back({first, s.score, {}});
    }
    excerpts[found->second].passages.push_back(d.passage);
  }
  // Each message's passage that matches the query's words best (lexical lists are best first).
  std::unordered_map<DocId, uint32_t> best_lexical;  // first passage -> passage
  for (const ScoredDoc& s : lexical) {
    const ShardDoc& d = docs_[s.doc];
    const DocId first = s.doc - d.passage;
    if (of_message.count(first) != 0) best_lexical.try_emplace(first, d.passage);
  }
  // Runs under the caller's lock; reaches docs_ through a pointer because the analysis checks a
  // lambda as a function of its own.
  const auto bytes = [docs = &docs_](DocId first, uint32_t lo, uint32_t hi) {
    const ShardDoc& a = (*docs)[first + lo];
    const ShardDoc& b = (*docs)[first + hi];
    return b.begin + b.text.size() - a.begin;
  };
  std::vector<ShardHit> hits;
  hits.reserve(excerpts.size());
  for (const Excerpt& e : excerpts) {
    // Passages [lo, hi]: centred on that passage (else the best ranked one), joined by the other
    // ranked passages, with those between them, while the excerpt stays within kMaxExcerptBytes.
    const auto lexical_best = best_lexical.find(e.first);
    uint32_t lo = lexical_best != best_lexical.end() ? lexical_best->second : e.passages.front();
    uint32_t hi = lo;
    for (const uint32_t p : e.passages) {
      if (bytes(e.first, std::min(lo, p), std::max(hi, p)) <= kMaxExcerptBytes) {
        lo = std::min(lo, p);
        hi = std::max(hi, p);
      }
    }
    ShardHit hit{docs_[e.first + lo], e.score};
    // The score is the best ranked passage's (the first of e.passages).
    if (explained) hit.explain = Explain(*explained, e.first + e.passages.front(), method, e.score);
    hit.doc.parts_json = docs_[e.first].parts_json;
    if (lo != hi) {
      hit.doc.text.clear();
      for (uint32_t p = lo; p <= hi; ++p) hit.doc.text += docs_[e.first + p].text;
      hit.doc.last_line = docs_[e.first + hi].last_line;
      hit.doc.asks = EndsWithQuestion(hit.doc.text);
    }
    hits.push_back(std::move(hit));
  }
  return hits;
}

size_t ScopeShard::size() const {
  ReaderLock lock(&mu_);
  return messages_;
}

Status ScopeShard::SaveGraph() {
  WriterLock lock(&mu_);
  return index_.SaveGraph();
}

void ScopeShard::DiscardGraph() {
  WriterLock lock(&mu_);
  index_.DiscardSavedGraph();
}

size_t ScopeShard::MemoryBytes() const {
  ReaderLock lock(&mu_);
  size_t bytes =
      index_.MemoryBytes() + turns_.MemoryBytes() + facts_.capacity() * sizeof(PackedFacts);
  for (const auto& d : docs_) {
    bytes += sizeof(ShardDoc) + d.id.capacity() + d.text.capacity() + d.parts_json.capacity() +
             d.session_id.capacity() + d.role.capacity();
    if (d.shape && d.passage == 0) bytes += sizeof(MessageShape) + d.shape->title.capacity();
  }
  return bytes;
}

}  // namespace engram
