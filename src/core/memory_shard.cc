#include "core/memory_shard.h"

#include <algorithm>
#include <span>

#include "common/heap_release.h"
#include "common/json_reader.h"
#include "common/memory_bytes.h"
#include "core/conversation_ranking.h"
#include "core/memory_provenance.h"
#include "index/question_form.h"
#include "index/windowed_bm25.h"

namespace engram {

namespace {

std::string ScopeIndexKey(std::string_view field, std::string_view value) {
  std::string key;
  key.reserve(value.size() + 2);
  key += field == "user_id" ? 'u' : field == "agent_id" ? 'a' : field == "app_id" ? 'p' : 'r';
  key += ':';
  key += value;
  return key;
}

// Keeps in `out` (sorted) only the docs also in `other` (sorted).
void IntersectInto(std::vector<DocId>& out, std::span<const DocId> other) {
  if (other.size() > 16 * out.size()) {
    // Much larger: binary searches from the last position found.
    auto from = other.begin();
    size_t kept = 0;
    for (DocId d : out) {
      from = std::lower_bound(from, other.end(), d);
      if (from == other.end()) break;
      if (*from == d) out[kept++] = d;
    }
    out.resize(kept);
    return;
  }
  auto end = std::set_intersection(out.begin(), out.end(), other.begin(), other.end(), out.begin());
  out.erase(end, out.end());
}

bool NewerFirst(const AgentMemory& a, const AgentMemory& b) {
  if (a.created_at_us != b.created_at_us) return a.created_at_us > b.created_at_us;
  return a.seq > b.seq;
}

}  // namespace

MemoryRecord ToRecord(const AgentMemory& m) {
  MemoryRecord r;
  r.seq = m.seq;
  r.id = m.id;
  r.text = m.text;
  r.user_id = m.user_id;
  r.agent_id = m.agent_id;
  r.run_id = m.run_id;
  r.app_id = m.app_id;
  r.session_id = m.session_id;
  r.metadata_json = m.metadata_json;
  r.categories = m.categories;
  r.created_at_us = m.created_at_us;
  r.updated_at_us = m.updated_at_us;
  r.expires_at_us = m.expires_at_us;
  r.role = m.role;
  r.source_ts_us = m.source_ts_us;
  r.provenance_json = m.provenance_json;
  return r;
}

MemoryChange ChangeOf(const AgentMemory& m, MemoryChange::Op op) {
  MemoryChange c;
  c.op = op;
  c.record = ToRecord(m);
  c.old_text = m.text;
  c.old_metadata_json = m.metadata_json;
  return c;
}

MemoryShard::MemoryShard(const Analyzer* analyzer, MemoryShardOptions options)
    : analyzer_(analyzer),
      options_(std::move(options)),
      index_(HybridIndexOptions{.bm25 = options_.bm25,
                                .vectors = options_.vectors,
                                .vector_model = options_.vector_model}) {}

std::string MemoryShard::ConversationKey(const AgentMemory& m) {
  // A run is one session of an agent with a user (mem0's run_id): without a session id of its
  // own, a memory's run is its conversation, so a user whose sessions are stored as runs
  // gets the same conversation steps as one who names each session in metadata.
  if ((m.role != kVerbatimRole && !m.source_ts_us) || (m.session_id.empty() && m.run_id.empty()))
    return "";
  // Every scope id is part of the key, so a conversation never links two users' turns.
  return ScopeIdsKey(m, /*with_session=*/true);
}

std::string MemoryShard::ScopeIdsKey(const AgentMemory& m, bool with_session) {
  std::string key;
  for (const std::string* part : {&m.user_id, &m.agent_id, &m.run_id, &m.app_id}) {
    key += *part;
    key += '\x1f';
  }
  if (with_session) key += m.session_id + '\x1f';
  return key;
}

size_t MemoryShard::LiveCount(const std::vector<DocId>& docs) const {
  size_t n = 0;
  for (DocId d : docs) n += index_.live(d) ? 1 : 0;
  return n;
}

bool MemoryShard::TurnBefore(const std::vector<Doc>& docs, DocId a, DocId b) {
  const AgentMemory& x = docs[a].memory;
  const AgentMemory& y = docs[b].memory;
  if (x.time_us() != y.time_us()) return x.time_us() < y.time_us();
  return x.seq < y.seq;
}

Status MemoryShard::EnsureLoaded(AgentMemoryStore* store, const std::string& workspace) {
  ReleaseHeapOnExit release;  // once the records below are freed
  MutexLock lock(&load_mu_);
  if (loaded_) return Status::Ok();
  // The version is read before the rows: a change made in between comes again with the next
  // refresh, and applying it twice is harmless.
  if (store->shared()) {
    auto v = store->ScopeVersion(ScopeKeyAgentMemories(workspace));
    if (!v.ok()) return v.status();
    version_ = *v;
  }
  auto records = store->LoadAgentMemories(workspace);
  if (!records.ok()) return records.status();
  release.Held(records->size());
  auto replaced = store->LoadReplacedHistory(workspace);
  if (!replaced.ok()) return replaced.status();
  std::vector<std::vector<std::string>> terms;
  terms.reserve(records->size());
  for (const auto& r : *records) terms.push_back(analyzer_->Analyze(r.text));
  WriterLock write(&mu_);
  {
    HybridIndex::Batch batch(&index_);
    for (size_t i = 0; i < records->size(); ++i) UpsertLocked((*records)[i], terms[i]);
  }
  LoadReplacedLocked(*replaced);
  loaded_ = true;
  return Status::Ok();
}

void MemoryShard::LoadReplacedLocked(const std::vector<HistoryRecord>& rows) {
  // Each memory's ADD / UPDATE rows, oldest first.
  std::unordered_map<std::string_view, std::vector<const HistoryRecord*>> by_memory;
  for (const HistoryRecord& h : rows) {
    if (h.new_text) by_memory[h.memory_id].push_back(&h);
  }
  for (const auto& [id, entries] : by_memory) {
    const std::optional<DocId> d = index_.Find(std::string(id));
    if (!d) continue;
    Doc& doc = docs_[*d];
    doc.replaced.clear();
    const std::vector<VersionTime> times = VersionTimes(entries);
    for (size_t i = 0; i < entries.size(); ++i) {
      // A version's first entry; the current version has no end.
      if (!times[i].begins_version || !times[i].valid_to_us) continue;
      doc.replaced.push_back(ReplacedVersion{.text = *entries[i]->new_text,
                                             .provenance_json = entries[i]->provenance_json,
                                             .valid_from_us = *times[i].valid_from_us,
                                             .valid_to_us = *times[i].valid_to_us});
    }
  }
}

Status MemoryShard::Refresh(AgentMemoryStore* store, const std::string& workspace) {
  if (!store->shared()) return Status::Ok();
  auto current = store->ScopeVersion(ScopeKeyAgentMemories(workspace));
  if (!current.ok()) return current.status();
  MutexLock lock(&load_mu_);
  if (!loaded_ || *current <= version_) return Status::Ok();
  auto delta = store->LoadAgentMemoriesSince(workspace, version_);
  if (!delta.ok()) return delta.status();
  // As a load: analysed outside the writer lock, applied in one batch under it, so the vector
  // graph catches up once.
  std::vector<std::vector<std::string>> terms;
  terms.reserve(delta->upserts.size());
  for (const auto& r : delta->upserts) terms.push_back(analyzer_->Analyze(r.text));
  {
    WriterLock write(&mu_);
    HybridIndex::Batch batch(&index_);
    for (size_t i = 0; i < delta->upserts.size(); ++i) UpsertLocked(delta->upserts[i], terms[i]);
    for (const auto& id : delta->removed_ids) RemoveLocked(id);
  }
  version_ = std::max(version_, delta->version);
  return Status::Ok();
}

int64_t MemoryShard::version() const {
  MutexLock lock(&load_mu_);
  return version_;
}

void MemoryShard::Upsert(const MemoryRecord& record) {
  // Analysis is the expensive part: outside the writer lock, so searches keep running.
  std::vector<std::string> terms = analyzer_->Analyze(record.text);
  WriterLock lock(&mu_);
  UpsertLocked(record, terms);
}

void MemoryShard::UpsertLocked(const MemoryRecord& r, const std::vector<std::string>& terms) {
  const std::string_view metadata_json =
      r.metadata_json.empty() ? std::string_view("{}") : std::string_view(r.metadata_json);
  bool reindex = options_.metadata_index;
  MissingVector missing = MissingVector::kClear;
  const std::optional<DocId> present = index_.Find(r.id);
  std::string old_conversation;
  int64_t old_time = 0;
  std::optional<ReplacedVersion> replaced;  // the version a new text replaces
  if (present) {
    const Doc& old = docs_[*present];
    old_conversation = ConversationKey(old.memory);
    old_time = old.memory.time_us();
    if (old.memory.text != r.text) {
      // Read from the provenance (2-3 us) only here and in VersionDuring, not at every load.
      const int64_t from = CurrentVersionStartUs(old.memory);
      replaced = ReplacedVersion{.text = old.memory.text,
                                 .provenance_json = old.memory.provenance_json,
                                 .valid_from_us = from,
                                 .valid_to_us = std::max(from, CurrentVersionStartUs(r))};
    }
    // A metadata-only update carries no vector: the one of the unchanged text stays valid.
    if (r.vector.empty() && old.memory.text == r.text) missing = MissingVector::kKeep;
    reindex = reindex && old.memory.metadata_json != metadata_json;
    if (reindex) IndexMetadata(*present, old.metadata, /*add=*/false);
  }
  const DocId d = index_.Upsert(
      r.id,
      HybridDoc{.terms = &terms, .vector = r.vector, .vector_model = r.vector_model, .seq = r.seq},
      missing);
  if (docs_.size() < index_.slot_count()) docs_.resize(index_.slot_count());
  if (!present) {
    for (auto [field, value] :
         {std::pair<std::string_view, const std::string*>{"user_id", &r.user_id},
          {"agent_id", &r.agent_id},
          {"run_id", &r.run_id},
          {"app_id", &r.app_id}}) {
      if (!value->empty()) by_scope_[ScopeIndexKey(field, *value)].push_back(d);
    }
  }
  Doc& doc = docs_[d];
  AgentMemory& m = doc.memory;
  m.id = r.id;
  m.seq = r.seq;
  m.text = r.text;
  m.user_id = r.user_id;
  m.agent_id = r.agent_id;
  m.run_id = r.run_id;
  m.app_id = r.app_id;
  m.session_id = r.session_id;
  m.metadata_json = metadata_json;
  m.categories = r.categories;
  m.created_at_us = r.created_at_us;
  m.updated_at_us = r.updated_at_us;
  m.expires_at_us = r.expires_at_us;
  m.role = r.role;
  m.source_ts_us = r.source_ts_us;
  m.provenance_json = r.provenance_json;
  if (replaced) {
    doc.replaced.push_back(std::move(*replaced));
    ForgetMentionsLocked(d);  // found in the text it replaces
  }
  doc.asks = EndsWithQuestion(m.text);
  doc.metadata = ReadJsonOrDiscarded(m.metadata_json, kStoredJsonLimits);
  if (!doc.metadata.is_object()) doc.metadata = nlohmann::json::object();
  if (reindex) IndexMetadata(d, doc.metadata, /*add=*/true);
  // A turn moves only when its conversation or its time changed (an edit keeps both).
  const std::string conversation = ConversationKey(m);
  if (present && conversation == old_conversation && m.time_us() == old_time) return;
  turns_.Remove(d);
  if (!conversation.empty()) {
    turns_.Insert(d, conversation,
                  [docs = &docs_](DocId a, DocId b) { return TurnBefore(*docs, a, b); });
  }
}

void MemoryShard::Remove(const std::string& id) {
  WriterLock lock(&mu_);
  RemoveLocked(id);
}

void MemoryShard::Apply(const std::vector<Change>& changes) {
  std::vector<std::vector<std::string>> terms(changes.size());
  for (size_t i = 0; i < changes.size(); ++i) {
    if (changes[i].upsert != nullptr) terms[i] = analyzer_->Analyze(changes[i].upsert->text);
  }
  WriterLock lock(&mu_);
  HybridIndex::Batch batch(&index_);
  for (size_t i = 0; i < changes.size(); ++i) {
    if (changes[i].upsert != nullptr) {
      UpsertLocked(*changes[i].upsert, terms[i]);
    } else if (changes[i].remove_id != nullptr) {
      RemoveLocked(*changes[i].remove_id);
    }
  }
}

void MemoryShard::RemoveLocked(const std::string& id) {
  const std::optional<DocId> d = index_.Remove(id);
  if (!d) return;
  Doc& doc = docs_[*d];
  if (options_.metadata_index) IndexMetadata(*d, doc.metadata, /*add=*/false);
  turns_.Remove(*d);
  ForgetMentionsLocked(*d);
  // The slot stays (slots are not reused: the scope lists may still name it); free what it held.
  doc.memory = AgentMemory{};
  doc.metadata = nlohmann::json();
  doc.replaced = {};
}

void MemoryShard::IndexMetadata(DocId d, const nlohmann::json& metadata, bool add) {
  std::vector<std::string> keys;
  for (auto field = metadata.begin(); field != metadata.end(); ++field) {
    keys.clear();
    if (!MetadataValueKeys(field.value(), &keys)) continue;
    if (add) {
      auto& values = by_metadata_[field.key()];
      for (std::string& key : keys) {
        std::vector<DocId>& docs = values[std::move(key)];
        // New docs have the largest id: appending keeps the list sorted.
        if (docs.empty() || docs.back() < d) {
          docs.push_back(d);
          ++metadata_postings_;
        } else {
          auto pos = std::lower_bound(docs.begin(), docs.end(), d);
          if (pos != docs.end() && *pos == d) continue;
          docs.insert(pos, d);
          ++metadata_postings_;
        }
      }
      continue;
    }
    auto values = by_metadata_.find(field.key());
    if (values == by_metadata_.end()) continue;
    for (const std::string& key : keys) {
      auto list = values->second.find(key);
      if (list == values->second.end()) continue;
      std::vector<DocId>& docs = list->second;
      auto pos = std::lower_bound(docs.begin(), docs.end(), d);
      if (pos != docs.end() && *pos == d) {
        docs.erase(pos);
        --metadata_postings_;
      }
      if (docs.empty()) values->second.erase(list);
    }
    if (values->second.empty()) by_metadata_.erase(values);
  }
}

void MemoryShard::ApplyVectors(const std::vector<VectorUpdate>& updates) {
  WriterLock lock(&mu_);
  HybridIndex::Batch batch(&index_);
  for (const auto& u : updates) {
    if (const std::optional<DocId> d = index_.FindSeq(u.seq))
      index_.SetVector(*d, u.model, u.vector);
  }
}

std::optional<AgentMemory> MemoryShard::Get(const std::string& id, int64_t now_us) const {
  ReaderLock lock(&mu_);
  const std::optional<DocId> d = index_.Find(id);
  if (!d) return std::nullopt;
  const AgentMemory& m = docs_[*d].memory;
  if (!m.VisibleAt(now_us)) return std::nullopt;
  return m;
}

FilterDoc MemoryShard::ViewOf(const Doc& d) const {
  const AgentMemory& m = d.memory;
  return FilterDoc{.id = m.id,
                   .user_id = m.user_id,
                   .agent_id = m.agent_id,
                   .run_id = m.run_id,
                   .app_id = m.app_id,
                   .session_id = m.session_id,
                   .text = m.text,
                   .categories = m.categories,
                   .created_at_us = m.created_at_us,
                   .updated_at_us = m.updated_at_us,
                   .metadata = &d.metadata};
}

std::vector<DocId> MemoryShard::ScopeDocs(const std::vector<ScopeKey>& keys) const {
  std::vector<DocId> out;
  for (const ScopeKey& key : keys) {
    auto it = by_scope_.find(ScopeIndexKey(key.field, key.value));
    if (it != by_scope_.end()) out.insert(out.end(), it->second.begin(), it->second.end());
  }
  // Each list is in DocId order; several keys (user_id a OR agent_id b) may overlap.
  if (keys.size() > 1) {
    std::sort(out.begin(), out.end());
    out.erase(std::unique(out.begin(), out.end()), out.end());
  }
  return out;
}

std::optional<std::vector<DocId>> MemoryShard::MetadataDocs(const MemoryFilter& filter,
                                                            const std::vector<DocId>* scope) const {
  if (!options_.metadata_index) return std::nullopt;
  const std::vector<MetadataEquality> equalities = filter.MetadataEqualities();
  if (equalities.empty()) return std::nullopt;
  std::vector<std::span<const DocId>> sets;
  std::vector<std::vector<DocId>> merged;  // unions of several values' docs (`in`)
  merged.reserve(equalities.size());
  for (const MetadataEquality& eq : equalities) {
    auto values = by_metadata_.find(eq.key);
    if (values == by_metadata_.end()) return std::vector<DocId>{};
    std::vector<const std::vector<DocId>*> lists;
    for (const std::string& value : eq.values) {
      auto docs = values->second.find(value);
      if (docs != values->second.end()) lists.push_back(&docs->second);
    }
    if (lists.empty()) return std::vector<DocId>{};
    if (lists.size() == 1) {
      sets.emplace_back(*lists.front());
      continue;
    }
    std::vector<DocId>& all = merged.emplace_back();
    for (const auto* list : lists) {
      const auto middle = static_cast<std::ptrdiff_t>(all.size());
      all.insert(all.end(), list->begin(), list->end());
      std::inplace_merge(all.begin(), all.begin() + middle, all.end());
    }
    // A doc is under two keys of one value only for huge unsigned integers (MetadataValueKeys).
    all.erase(std::unique(all.begin(), all.end()), all.end());
    sets.emplace_back(all);
  }
  if (scope != nullptr) sets.emplace_back(*scope);
  std::sort(sets.begin(), sets.end(), [](auto a, auto b) { return a.size() < b.size(); });
  std::vector<DocId> out(sets.front().begin(), sets.front().end());
  for (size_t i = 1; i < sets.size() && !out.empty(); ++i) IntersectInto(out, sets[i]);
  return out;
}

std::optional<std::vector<DocId>> MemoryShard::Candidates(const MemoryFilter& filter,
                                                          int64_t now_us) const {
  std::optional<std::vector<DocId>> docs;
  const auto keys = filter.ScopeKeys();
  if (keys) docs = ScopeDocs(*keys);
  auto narrowed = MetadataDocs(filter, docs ? &*docs : nullptr);
  const bool indexed = narrowed.has_value();
  if (indexed) docs = std::move(narrowed);
  if (!docs) return std::nullopt;
  std::vector<DocId> out;
  for (DocId d : *docs) {
    const Doc& doc = docs_[d];
    if (!index_.live(d) || !doc.memory.VisibleAt(now_us)) continue;
    // Docs from the metadata index satisfy its exact equalities, docs from the scope index the
    // scope's: only the rest is tested.
    const bool match = keys      ? filter.MatchesInScope(ViewOf(doc), /*equalities_given=*/indexed)
                       : indexed ? filter.MatchesGivenEqualities(ViewOf(doc))
                                 : filter.Matches(ViewOf(doc));
    if (match) {
      out.push_back(d);
    }
  }
  return out;
}

Result<std::vector<MemoryHit>> MemoryShard::Search(const MemoryQuery& query) const {
  static const MemoryFilter kMatchAll;
  const MemoryFilter& filter = query.filter ? *query.filter : kMatchAll;
  auto keys = filter.ScopeKeys();
  if (!keys) {
    return Status::InvalidParameter(
        "the search must be confined to a user_id, agent_id, run_id or app_id (top-level or in "
        "filters)");
  }
  ReaderLock lock(&mu_);
  // The lambdas below run under this lock; they reach docs_ and index_ through these pointers
  // because the analysis checks a lambda as a function of its own.
  const std::vector<Doc>* docs = &docs_;
  const HybridIndex* index = &index_;
  std::vector<MemoryHit> hits;
  std::vector<DocId> scope = ScopeDocs(*keys);
  if (scope.empty() || query.k == 0) return hits;
  // BM25 scores with the statistics of the searched scope (its users' memories, before any
  // metadata narrowing): a user's ranking does not depend on what other users of the workspace
  // wrote, and matches what the same turns get on the Leaderboard path (one shard per user).
  // When the scope holds every live memory of the workspace, those are the index's own.
  std::optional<Bm25Stats> stats;
  if (options_.retrieval.mode != RetrievalMode::kVector && LiveCount(scope) != index_.size()) {
    stats = index_.bm25().StatsOver(query.terms, scope);
  }
  // A selective metadata equality (one topic of many) narrows the scope to the docs having the
  // value, so that retrieval tests the filter on those only, and without the equalities the index
  // decided exactly (their JSON lookups were most of a filtered search's CPU). Windowed BM25
  // then lends words only between turns of the narrowed scope.
  auto narrowed = MetadataDocs(filter, &scope);
  const bool indexed = narrowed.has_value();
  if (indexed) scope = std::move(*narrowed);
  if (scope.empty()) return hits;

  // The filter is part of retrieval, so it never empties a truncated top-k. Both retrievers ask
  // it lazily, only about documents of the (narrowed) scope good enough to enter their current
  // top-k, and each document's verdict is computed at most once per query: kOut (not in the
  // scope), kUnknown, kAdmitted, kRejected.
  enum : int8_t { kOut, kUnknown, kAdmitted, kRejected };
  std::vector<int8_t> verdict(index_.slot_count(), kOut);
  for (DocId d : scope) verdict[d] = kUnknown;
  const std::function<bool(DocId)> in_scope = [&](DocId d) { return verdict[d] != kOut; };
  const std::function<bool(DocId)> admits = [&](DocId d) {
    int8_t& v = verdict[d];
    if (v == kUnknown) {
      const Doc& doc = (*docs)[d];
      bool ok = index->live(d) && doc.memory.VisibleAt(query.now_us);
      // Every doc asked about is in ScopeDocs(keys) (maybe narrowed by the metadata index).
      if (ok) ok = filter.MatchesInScope(ViewOf(doc), /*equalities_given=*/indexed);
      v = ok ? kAdmitted : kRejected;
    }
    return v == kAdmitted;
  };
  const RetrievalOptions ranking = ForQuery(options_.retrieval, query.names_identifier);
  // Neighbours and the question factor pick the k from all fused candidates. Without any
  // conversation in the workspace there are no neighbours, and the question factor is a per-hit
  // factor that fusion applies before it keeps the k (the same ranking, without the widening).
  const bool steps = query.conversation_steps;
  const bool scored_neighbours =
      ranking.neighbours > 0 &&
      ranking.neighbour_placement == RetrievalOptions::NeighbourPlacement::kByScore;
  const bool neighbours = steps && turns_.group_count() > 0;
  const size_t candidates = std::max(query.k, ranking.candidates);
  HybridQuery retrieval;
  retrieval.terms = &query.terms;
  retrieval.k = neighbours ? candidates : query.k;
  retrieval.candidates = candidates;
  retrieval.fusion = ranking.fusion;
  retrieval.among = &scope;
  retrieval.admits = &admits;
  retrieval.admits_covers_among = true;  // kOut: not admitted
  const std::function<float(DocId)> question_factor = [&](DocId d) {
    const Doc& doc = (*docs)[d];
    return doc.asks && doc.memory.text.size() <= ranking.question_max_chars
               ? ranking.question_factor
               : 1.0f;
  };
  if (steps && !neighbours && scored_neighbours) retrieval.scale = &question_factor;
  retrieval.keep_cosines = true;
  retrieval.explain = query.explain;
  retrieval.bm25_stats = stats ? &*stats : nullptr;
  retrieval.use_bm25 = ranking.mode != RetrievalMode::kVector;
  if (ranking.mode != RetrievalMode::kBm25) retrieval.vector = query.vector;
  if (ranking.mode == RetrievalMode::kBm25) retrieval.fusion.vector_weight = 0;
  if (ranking.mode == RetrievalMode::kVector) retrieval.fusion.vector_weight = 1;
  std::vector<ScoredDoc> windows;
  if (steps && retrieval.use_bm25 && ranking.window_share > 0 && turns_.group_count() > 0) {
    windows =
        WindowedBm25(index_.bm25(), turns_, index_.slot_count(), query.terms, candidates,
                     ranking.window_share, WindowFilter{&in_scope, &admits}, retrieval.bm25_stats);
    retrieval.lexical = &windows;
  }
  std::function<float(DocId)> closeness;
  if (steps && query.dates && ranking.time_weight > 0) {
    retrieval.fusion.prior_weight = ranking.time_weight;
    closeness = [&](DocId d) {
      const Doc& doc = (*docs)[d];
      // A memory whose replaced version held during the dates is as close as that version.
      if (const ReplacedVersion* v = VersionDuring(doc, *query.dates)) {
        return DateCloseness(std::max(v->valid_from_us, query.dates->begin_us), *query.dates,
                             ranking);
      }
      return DateCloseness(doc.memory.time_us(), *query.dates, ranking);
    };
    retrieval.prior = &closeness;
  }
  HybridHits found = index_.Search(retrieval);
  if (neighbours) {
    const std::function<TurnFacts(DocId)> facts = [docs](DocId d) {
      return TurnFacts{(*docs)[d].memory.text.size(), (*docs)[d].asks};
    };
    found.ranked =
        WithNeighbours(found.ranked, query.k, ranking, turns_, index_.slot_count(), facts, &admits);
  }
  for (const ScoredDoc& s : found.ranked) {
    if (s.score < query.threshold) continue;
    MemoryHit hit;
    const Doc& doc = docs_[s.doc];
    hit.memory = doc.memory;
    const bool as_of = query.show_replaced && query.dates;
    if (const ReplacedVersion* v = as_of ? VersionDuring(doc, *query.dates) : nullptr) {
      hit.memory.text = v->text;
      hit.memory.provenance_json = v->provenance_json;
      hit.memory.valid_from_us = v->valid_from_us;
      hit.memory.valid_to_us = v->valid_to_us;
    }
    hit.score = std::clamp(s.score, 0.0f, 1.0f);
    hit.similarity = found.CosineOf(s.doc).value_or(0.0f);
    if (query.explain) hit.explain = Explain(found, s.doc, retrieval.fusion.method, hit.score);
    hits.push_back(std::move(hit));
  }
  return hits;
}

const ReplacedVersion* MemoryShard::VersionDuring(const Doc& doc, const TimeRange& range) {
  if (doc.replaced.empty() || CurrentVersionStartUs(doc.memory) < range.end_us) return nullptr;
  for (auto v = doc.replaced.rbegin(); v != doc.replaced.rend(); ++v) {
    if (v->valid_from_us < range.end_us && v->valid_to_us > range.begin_us) return &*v;
  }
  return nullptr;
}

std::vector<DocId> MemoryShard::Matching(const MemoryFilter& filter, int64_t now_us) const {
  if (auto candidates = Candidates(filter, now_us)) return std::move(*candidates);
  std::vector<DocId> out;
  for (DocId d = 0; d < docs_.size(); ++d) {
    const Doc& doc = docs_[d];
    if (index_.live(d) && doc.memory.VisibleAt(now_us) && filter.Matches(ViewOf(doc))) {
      out.push_back(d);
    }
  }
  return out;
}

std::vector<AgentMemory> MemoryShard::List(const MemoryFilter& filter, int64_t now_us,
                                           size_t offset, size_t limit, size_t* total) const {
  ReaderLock lock(&mu_);
  std::vector<const AgentMemory*> matching;
  for (DocId d : Matching(filter, now_us)) matching.push_back(&docs_[d].memory);
  *total = matching.size();
  std::vector<AgentMemory> out;
  if (offset >= matching.size()) return out;
  const size_t end = std::min(matching.size(), offset + limit);
  std::partial_sort(matching.begin(), matching.begin() + static_cast<long>(end), matching.end(),
                    [](const AgentMemory* a, const AgentMemory* b) { return NewerFirst(*a, *b); });
  for (size_t i = offset; i < end; ++i) out.push_back(*matching[i]);
  return out;
}

namespace {

// Bytes of one mention cache entry: its hash node, the vector, its mentions and the surfaces
// beyond the small-string buffer.
size_t MentionBytes(const std::vector<EntityMention>& mentions) {
  size_t bytes = kHashNodeBytes + sizeof(DocId) + sizeof(mentions) +
                 mentions.capacity() * sizeof(EntityMention);
  for (const EntityMention& e : mentions) bytes += StringHeapBytes(e.surface);
  return bytes;
}

}  // namespace

std::vector<CatalogEntity> MemoryShard::NamedEntities(const MemoryFilter& filter,
                                                      int64_t now_us) const {
  ReaderLock lock(&mu_);
  EntityCatalog catalog;
  for (DocId d : Matching(filter, now_us)) {
    const AgentMemory& m = docs_[d].memory;
    // The cache's lock is held only to look up and to insert, so listings of one shard read
    // texts in parallel (two may read the same one; the first to insert keeps its entry). An
    // entry is erased only under mu_ held exclusively and a rehash moves no element, so the
    // reference stays valid while mu_ is held shared.
    const std::vector<EntityMention>* mentions = nullptr;
    {
      MutexLock cache(&mentions_mu_);
      if (auto kept = mentions_.find(d); kept != mentions_.end()) mentions = &kept->second;
    }
    if (mentions == nullptr) {
      std::vector<EntityMention> found = FindEntityMentions(m.text);
      MutexLock cache(&mentions_mu_);
      auto [kept, inserted] = mentions_.try_emplace(d, std::move(found));
      if (inserted) mentions_bytes_ += MentionBytes(kept->second);
      mentions = &kept->second;
    }
    std::string conversation = ConversationKey(m);
    if (conversation.empty()) conversation = ScopeIdsKey(m, /*with_session=*/false);
    catalog.Add(*mentions, m.time_us(), conversation);
  }
  return catalog.Entities();
}

void MemoryShard::ForgetMentionsLocked(DocId d) {
  MutexLock cache(&mentions_mu_);
  auto mentions = mentions_.find(d);
  if (mentions == mentions_.end()) return;
  mentions_bytes_ -= MentionBytes(mentions->second);
  mentions_.erase(mentions);
}

std::vector<ScopeSummary> MemoryShard::Scopes(int64_t now_us) const {
  ReaderLock lock(&mu_);
  std::vector<ScopeSummary> out;
  for (const auto& [key, docs] : by_scope_) {
    ScopeSummary s;
    for (DocId d : docs) {
      const Doc& doc = docs_[d];
      if (!index_.live(d) || !doc.memory.VisibleAt(now_us)) continue;
      const AgentMemory& m = doc.memory;
      s.first_created_at_us =
          s.memories == 0 ? m.created_at_us : std::min(s.first_created_at_us, m.created_at_us);
      s.last_updated_at_us = std::max(s.last_updated_at_us, m.updated_at_us);
      ++s.memories;
    }
    if (s.memories == 0) continue;
    switch (key[0]) {  // ScopeIndexKey's letters
      case 'u':
        s.field = "user_id";
        break;
      case 'a':
        s.field = "agent_id";
        break;
      case 'p':
        s.field = "app_id";
        break;
      default:
        s.field = "run_id";
        break;
    }
    s.value = key.substr(2);
    out.push_back(std::move(s));
  }
  return out;
}

std::vector<AgentMemory> MemoryShard::Expired(int64_t now_us) const {
  ReaderLock lock(&mu_);
  std::vector<AgentMemory> out;
  for (DocId d = 0; d < docs_.size(); ++d) {
    if (index_.live(d) && !docs_[d].memory.VisibleAt(now_us)) out.push_back(docs_[d].memory);
  }
  return out;
}

std::vector<std::pair<int64_t, std::string>> MemoryShard::MissingVectors() const {
  ReaderLock lock(&mu_);
  std::vector<std::pair<int64_t, std::string>> out;
  for (DocId d = 0; d < docs_.size(); ++d) {
    if (index_.live(d) && !index_.HasVector(d))
      out.emplace_back(docs_[d].memory.seq, docs_[d].memory.text);
  }
  return out;
}

size_t MemoryShard::size() const {
  ReaderLock lock(&mu_);
  return index_.size();
}

size_t MemoryShard::metadata_postings() const {
  ReaderLock lock(&mu_);
  return metadata_postings_;
}

Status MemoryShard::SaveGraph() {
  WriterLock lock(&mu_);
  return index_.SaveGraph();
}

void MemoryShard::DiscardGraph() {
  WriterLock lock(&mu_);
  index_.DiscardSavedGraph();
}

size_t MemoryShard::MemoryBytes() const {
  ReaderLock lock(&mu_);
  size_t bytes = index_.MemoryBytes() + turns_.MemoryBytes() + docs_.capacity() * sizeof(Doc);
  for (const Doc& d : docs_) {
    bytes += d.memory.text.capacity() + d.memory.metadata_json.capacity() + d.memory.id.capacity();
    for (const ReplacedVersion& v : d.replaced) {
      bytes += sizeof(v) + v.text.capacity() + v.provenance_json.capacity();
    }
  }
  // The metadata index: hash nodes, bucket arrays, strings beyond the small-string buffer
  // (common/memory_bytes.h) and the doc lists.
  bytes += by_metadata_.bucket_count() * sizeof(void*);
  for (const auto& [key, values] : by_metadata_) {
    bytes += kHashNodeBytes + sizeof(*by_metadata_.begin()) + StringHeapBytes(key) +
             values.bucket_count() * sizeof(void*);
    for (const auto& [value, ids] : values) {
      bytes += kHashNodeBytes + sizeof(*values.begin()) + StringHeapBytes(value) +
               ids.capacity() * sizeof(DocId);
    }
  }
  MutexLock cache(&mentions_mu_);
  return bytes + mentions_bytes_ + mentions_.bucket_count() * sizeof(void*);
}

}  // namespace engram
