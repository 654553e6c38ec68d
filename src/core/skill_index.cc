#include "core/skill_index.h"

#include <algorithm>

#include "common/memory_bytes.h"
#include "common/mutex.h"

namespace engram {

namespace {

void AppendLine(std::string& out, std::string_view s) {
  if (s.empty()) return;
  if (!out.empty()) out += '\n';
  out += s;
}

// "deploy-web-app" -> "deploy web app", so each word of a name is a term.
std::string NameWords(const std::string& name) {
  std::string out = name;
  std::replace_if(
      out.begin(), out.end(), [](char c) { return c == '-' || c == '_'; }, ' ');
  return out;
}

}  // namespace

std::string SkillIntentText(const SkillRecord& s) {
  std::string out;
  AppendLine(out, NameWords(s.name));
  AppendLine(out, s.description);
  for (const auto& t : s.triggers) AppendLine(out, t);
  for (const auto& t : s.tags) AppendLine(out, t);
  return out;
}

std::string SkillSearchText(const SkillRecord& s) {
  std::string out = SkillIntentText(s);
  auto md = s.files.find("SKILL.md");
  if (md != s.files.end()) AppendLine(out, md->second);
  return out;
}

SkillIndex::SkillIndex(const Analyzer* analyzer, SkillIndexOptions options)
    : analyzer_(analyzer),
      options_(std::move(options)),
      index_(HybridIndexOptions{.bm25 = options_.bm25,
                                .vectors = options_.vectors,
                                .vector_model = options_.vector_model}) {}

std::string SkillIndex::NameKey(const std::string& owner, const std::string& name) {
  return owner + '\x1f' + name;
}

void SkillIndex::Upsert(const SkillRecord& r) {
  // Analysis is the expensive part: outside the lock.
  std::vector<std::string> terms = analyzer_->Analyze(SkillSearchText(r));
  WriterLock lock(&mu_);
  bool inserted = false;
  const DocId d = index_.Upsert(
      r.id, HybridDoc{.terms = &terms, .vector = r.vector, .vector_model = r.vector_model},
      MissingVector::kClear, &inserted);
  if (docs_.size() < index_.slot_count()) docs_.resize(index_.slot_count());
  if (inserted) {
    by_owner_[r.owner].push_back(d);
  } else {
    const SkillSummary& old = docs_[d].skill;
    by_name_.erase(NameKey(old.owner, old.name));
    if (old.owner != r.owner) by_owner_[r.owner].push_back(d);
  }
  docs_[d].skill = {r.id, r.name, r.description, r.version, r.owner, r.agent_id, r.updated_at_us};
  by_name_[NameKey(r.owner, r.name)] = d;
}

void SkillIndex::Remove(const std::string& id) {
  WriterLock lock(&mu_);
  const std::optional<DocId> d = index_.Remove(id);
  if (!d) return;
  by_name_.erase(NameKey(docs_[*d].skill.owner, docs_[*d].skill.name));
  docs_[*d] = Doc{};
}

std::optional<SkillSummary> SkillIndex::Get(const std::string& id) const {
  ReaderLock lock(&mu_);
  const std::optional<DocId> d = index_.Find(id);
  if (!d) return std::nullopt;
  return docs_[*d].skill;
}

std::optional<std::string> SkillIndex::IdByName(const std::string& owner,
                                                const std::string& name) const {
  ReaderLock lock(&mu_);
  auto it = by_name_.find(NameKey(owner, name));
  if (it == by_name_.end()) return std::nullopt;
  return docs_[it->second].skill.id;
}

std::vector<SkillHit> SkillIndex::Search(const SkillQuery& q) const {
  ReaderLock lock(&mu_);
  std::vector<SkillHit> hits;
  auto owned = by_owner_.find(q.user_id);
  if (owned == by_owner_.end() || q.k == 0) return hits;
  std::vector<DocId> candidates;
  std::vector<DocId> owners;  // the owner's live skills, whatever their agent
  for (DocId d : owned->second) {
    const Doc& doc = docs_[d];
    if (!index_.live(d) || doc.skill.owner != q.user_id) continue;
    owners.push_back(d);
    if (q.agent_id.empty() || doc.skill.agent_id == q.agent_id) candidates.push_back(d);
  }
  std::sort(candidates.begin(), candidates.end());
  candidates.erase(std::unique(candidates.begin(), candidates.end()), candidates.end());
  HybridQuery query;
  query.terms = &q.terms;
  query.vector = q.vector;
  query.k = q.k;
  query.candidates = options_.candidates;
  query.fusion = options_.fusion;
  query.among = &candidates;
  // BM25 scores with the statistics of the owner's skills: one user's ranking does not depend on
  // what other users of the workspace wrote (as for V4 memories).
  const Bm25Stats stats = index_.bm25().StatsOver(q.terms, owners);
  query.bm25_stats = &stats;
  query.explain = q.explain;
  const HybridHits found = index_.Search(query);
  for (const ScoredDoc& s : found.ranked) {
    SkillHit hit{docs_[s.doc].skill, std::clamp(s.score, 0.0f, 1.0f), std::nullopt};
    if (q.explain) hit.explain = Explain(found, s.doc, query.fusion.method, hit.score);
    hits.push_back(std::move(hit));
  }
  return hits;
}

std::vector<SkillSummary> SkillIndex::List(const std::string& owner, const std::string& agent_id,
                                           size_t offset, size_t limit, size_t* total) const {
  ReaderLock lock(&mu_);
  std::vector<const SkillSummary*> matching;
  if (auto owned = by_owner_.find(owner); owned != by_owner_.end()) {
    for (DocId d : owned->second) {
      const SkillSummary& s = docs_[d].skill;
      // The owner's list may hold dead slots, and a slot twice; only live ones of this owner.
      if (!index_.live(d) || s.owner != owner) continue;
      if (!agent_id.empty() && s.agent_id != agent_id) continue;
      matching.push_back(&s);
    }
  }
  std::sort(matching.begin(), matching.end());
  matching.erase(std::unique(matching.begin(), matching.end()), matching.end());
  *total = matching.size();
  std::vector<SkillSummary> out;
  if (offset >= matching.size()) return out;
  const size_t end = std::min(matching.size(), offset + limit);
  std::partial_sort(matching.begin(), matching.begin() + static_cast<long>(end), matching.end(),
                    [](const SkillSummary* a, const SkillSummary* b) {
                      return a->updated_at_us != b->updated_at_us
                                 ? a->updated_at_us > b->updated_at_us
                                 : a->id < b->id;
                    });
  for (size_t i = offset; i < end; ++i) out.push_back(*matching[i]);
  return out;
}

size_t SkillIndex::size() const {
  ReaderLock lock(&mu_);
  return index_.size();
}

size_t SkillIndex::MemoryBytes() const {
  ReaderLock lock(&mu_);
  // Strings beyond the small-string buffer and hash nodes with their bucket arrays
  // (common/memory_bytes.h).
  size_t bytes = index_.MemoryBytes() + docs_.capacity() * sizeof(Doc);
  for (const Doc& d : docs_) {
    const SkillSummary& s = d.skill;
    bytes += StringHeapBytes(s.id) + StringHeapBytes(s.name) + StringHeapBytes(s.description) +
             StringHeapBytes(s.version) + StringHeapBytes(s.owner) + StringHeapBytes(s.agent_id);
  }
  bytes += by_name_.bucket_count() * sizeof(void*);
  for (const auto& [key, doc] : by_name_)
    bytes += kHashNodeBytes + sizeof(*by_name_.begin()) + StringHeapBytes(key);
  bytes += by_owner_.bucket_count() * sizeof(void*);
  for (const auto& [owner, ids] : by_owner_) {
    bytes += kHashNodeBytes + sizeof(*by_owner_.begin()) + StringHeapBytes(owner) +
             ids.capacity() * sizeof(DocId);
  }
  return bytes;
}

}  // namespace engram
