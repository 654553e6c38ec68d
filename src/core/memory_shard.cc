#include "core/memory_shard.h"

#include <algorithm>
#include <span>

#include "common/json_reader.h"

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

Status MemoryShard::EnsureLoaded(Store* store, const std::string& workspace) {
  std::lock_guard<std::mutex> lock(load_mu_);
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
  std::vector<std::vector<std::string>> terms;
  terms.reserve(records->size());
  for (const auto& r : *records) terms.push_back(analyzer_->Analyze(r.text));
  std::unique_lock<std::shared_mutex> write(mu_);
  for (size_t i = 0; i < records->size(); ++i) UpsertLocked((*records)[i], terms[i]);
  loaded_ = true;
  return Status::Ok();
}

Status MemoryShard::Refresh(Store* store, const std::string& workspace) {
  if (!store->shared()) return Status::Ok();
  auto current = store->ScopeVersion(ScopeKeyAgentMemories(workspace));
  if (!current.ok()) return current.status();
  std::lock_guard<std::mutex> lock(load_mu_);
  if (!loaded_ || *current <= version_) return Status::Ok();
  auto delta = store->LoadAgentMemoriesSince(workspace, version_);
  if (!delta.ok()) return delta.status();
  for (const auto& r : delta->upserts) Upsert(r);
  for (const auto& id : delta->removed_ids) Remove(id);
  version_ = std::max(version_, delta->version);
  return Status::Ok();
}

int64_t MemoryShard::version() const {
  std::lock_guard<std::mutex> lock(load_mu_);
  return version_;
}

void MemoryShard::Upsert(const MemoryRecord& record) {
  // Analysis is the expensive part: outside the writer lock, so searches keep running.
  std::vector<std::string> terms = analyzer_->Analyze(record.text);
  std::unique_lock<std::shared_mutex> lock(mu_);
  UpsertLocked(record, terms);
}

void MemoryShard::UpsertLocked(const MemoryRecord& r, const std::vector<std::string>& terms) {
  const std::string_view metadata_json =
      r.metadata_json.empty() ? std::string_view("{}") : std::string_view(r.metadata_json);
  bool reindex = options_.metadata_index;
  MissingVector missing = MissingVector::kClear;
  const std::optional<DocId> present = index_.Find(r.id);
  if (present) {
    const Doc& old = docs_[*present];
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
  doc.metadata = ReadJsonOrDiscarded(m.metadata_json, kStoredJsonLimits);
  if (!doc.metadata.is_object()) doc.metadata = nlohmann::json::object();
  if (reindex) IndexMetadata(d, doc.metadata, /*add=*/true);
}

void MemoryShard::Remove(const std::string& id) {
  std::unique_lock<std::shared_mutex> lock(mu_);
  const std::optional<DocId> d = index_.Remove(id);
  if (!d) return;
  Doc& doc = docs_[*d];
  if (options_.metadata_index) IndexMetadata(*d, doc.metadata, /*add=*/false);
  // The slot stays (slots are not reused: the scope lists may still name it); free what it held.
  doc.memory = AgentMemory{};
  doc.metadata = nlohmann::json();
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
  std::unique_lock<std::shared_mutex> lock(mu_);
  for (const auto& u : updates) {
    if (const std::optional<DocId> d = index_.FindSeq(u.seq))
      index_.SetVector(*d, u.model, u.vector);
  }
}

std::optional<AgentMemory> MemoryShard::Get(const std::string& id, int64_t now_us) const {
  std::shared_lock<std::shared_mutex> lock(mu_);
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
  std::shared_lock<std::shared_mutex> lock(mu_);
  std::vector<MemoryHit> hits;
  std::vector<DocId> scope = ScopeDocs(*keys);
  if (scope.empty() || query.k == 0) return hits;
  // A selective metadata equality (one topic of many) narrows the scope to the docs having the
  // value, so that retrieval tests the filter on those only, and without the equalities the index
  // decided exactly (their JSON lookups were most of a filtered search's CPU).
  auto narrowed = MetadataDocs(filter, &scope);
  const bool indexed = narrowed.has_value();
  if (indexed) scope = std::move(*narrowed);
  if (scope.empty()) return hits;

  // The filter is part of retrieval, so it never empties a truncated top-k. Both retrievers ask
  // it lazily, only about documents of the (narrowed) scope good enough to enter their current
  // top-k, and each document's verdict is computed at most once per query (0 unknown, 1 admitted,
  // 2 rejected).
  std::vector<int8_t> verdict(index_.slot_count(), 0);
  const std::function<bool(DocId)> admits = [&](DocId d) {
    int8_t& v = verdict[d];
    if (v == 0) {
      const Doc& doc = docs_[d];
      bool ok = index_.live(d) && doc.memory.VisibleAt(query.now_us);
      // Every doc asked about is in ScopeDocs(keys) (maybe narrowed by the metadata index).
      if (ok) ok = filter.MatchesInScope(ViewOf(doc), /*equalities_given=*/indexed);
      v = ok ? 1 : 2;
    }
    return v == 1;
  };
  HybridQuery retrieval;
  retrieval.terms = &query.terms;
  retrieval.vector = query.vector;
  retrieval.k = query.k;
  retrieval.candidates = options_.candidates;
  retrieval.fusion = options_.fusion;
  retrieval.among = &scope;
  retrieval.admits = &admits;
  retrieval.keep_cosines = true;
  const HybridHits found = index_.Search(retrieval);
  for (const ScoredDoc& s : found.ranked) {
    if (s.score < query.threshold) continue;
    MemoryHit hit;
    hit.memory = docs_[s.doc].memory;
    hit.score = std::clamp(s.score, 0.0f, 1.0f);
    hit.similarity = found.CosineOf(s.doc).value_or(0.0f);
    hits.push_back(std::move(hit));
  }
  return hits;
}

std::vector<AgentMemory> MemoryShard::List(const MemoryFilter& filter, int64_t now_us,
                                           size_t offset, size_t limit, size_t* total) const {
  std::shared_lock<std::shared_mutex> lock(mu_);
  std::vector<const AgentMemory*> matching;
  auto candidates = Candidates(filter, now_us);
  if (candidates) {
    for (DocId d : *candidates) matching.push_back(&docs_[d].memory);
  } else {
    for (DocId d = 0; d < docs_.size(); ++d) {
      const Doc& doc = docs_[d];
      if (index_.live(d) && doc.memory.VisibleAt(now_us) && filter.Matches(ViewOf(doc))) {
        matching.push_back(&doc.memory);
      }
    }
  }
  *total = matching.size();
  std::vector<AgentMemory> out;
  if (offset >= matching.size()) return out;
  const size_t end = std::min(matching.size(), offset + limit);
  std::partial_sort(matching.begin(), matching.begin() + static_cast<long>(end), matching.end(),
                    [](const AgentMemory* a, const AgentMemory* b) { return NewerFirst(*a, *b); });
  for (size_t i = offset; i < end; ++i) out.push_back(*matching[i]);
  return out;
}

std::vector<ScopeSummary> MemoryShard::Scopes(int64_t now_us) const {
  std::shared_lock<std::shared_mutex> lock(mu_);
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
  std::shared_lock<std::shared_mutex> lock(mu_);
  std::vector<AgentMemory> out;
  for (DocId d = 0; d < docs_.size(); ++d) {
    if (index_.live(d) && !docs_[d].memory.VisibleAt(now_us)) out.push_back(docs_[d].memory);
  }
  return out;
}

std::vector<std::pair<int64_t, std::string>> MemoryShard::MissingVectors() const {
  std::shared_lock<std::shared_mutex> lock(mu_);
  std::vector<std::pair<int64_t, std::string>> out;
  for (DocId d = 0; d < docs_.size(); ++d) {
    if (index_.live(d) && !index_.HasVector(d))
      out.emplace_back(docs_[d].memory.seq, docs_[d].memory.text);
  }
  return out;
}

size_t MemoryShard::size() const {
  std::shared_lock<std::shared_mutex> lock(mu_);
  return index_.size();
}

size_t MemoryShard::metadata_postings() const {
  std::shared_lock<std::shared_mutex> lock(mu_);
  return metadata_postings_;
}

size_t MemoryShard::MemoryBytes() const {
  std::shared_lock<std::shared_mutex> lock(mu_);
  size_t bytes = index_.MemoryBytes() + docs_.capacity() * sizeof(Doc);
  for (const Doc& d : docs_) {
    bytes += d.memory.text.capacity() + d.memory.metadata_json.capacity() + d.memory.id.capacity();
  }
  // The metadata index: libstdc++ hash nodes (next pointer, cached hash, value), bucket arrays,
  // strings beyond the small-string buffer and the doc lists.
  constexpr size_t kNode = 2 * sizeof(void*);
  constexpr size_t kSsoCapacity = 15;
  auto heap = [](const std::string& s) {
    return s.capacity() > kSsoCapacity ? s.capacity() + 1 : 0;
  };
  bytes += by_metadata_.bucket_count() * sizeof(void*);
  for (const auto& [key, values] : by_metadata_) {
    bytes +=
        kNode + sizeof(*by_metadata_.begin()) + heap(key) + values.bucket_count() * sizeof(void*);
    for (const auto& [value, ids] : values) {
      bytes += kNode + sizeof(*values.begin()) + heap(value) + ids.capacity() * sizeof(DocId);
    }
  }
  return bytes;
}

}  // namespace engram
