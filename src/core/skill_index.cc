#include "core/skill_index.h"

#include <algorithm>
#include <functional>
#include <mutex>

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
      bm25_(options_.bm25),
      vectors_(options_.vectors) {}

std::string SkillIndex::NameKey(const std::string& owner, const std::string& name) {
  return owner + '\x1f' + name;
}

void SkillIndex::Upsert(const SkillRecord& r) {
  // Analysis is the expensive part: outside the lock.
  std::vector<std::string> terms = analyzer_->Analyze(SkillSearchText(r));
  std::unique_lock<std::shared_mutex> lock(mu_);
  DocId d;
  auto it = by_id_.find(r.id);
  if (it != by_id_.end()) {
    d = it->second;
    const SkillSummary& old = docs_[d].skill;
    by_name_.erase(NameKey(old.owner, old.name));
    if (old.owner != r.owner) by_owner_[r.owner].push_back(d);
  } else {
    d = static_cast<DocId>(docs_.size());
    docs_.emplace_back();
    by_id_.emplace(r.id, d);
    by_owner_[r.owner].push_back(d);
  }
  Doc& doc = docs_[d];
  doc.live = true;
  doc.skill = {r.id, r.name, r.description, r.version, r.owner, r.agent_id, r.updated_at_us};
  by_name_[NameKey(r.owner, r.name)] = d;
  bm25_.Add(d, terms);
  if (!r.vector.empty() && r.vector_model == options_.vector_model &&
      static_cast<int>(r.vector.size()) == vectors_.dim()) {
    vectors_.Set(d, r.vector.data());
  } else {
    vectors_.Remove(d);
  }
}

void SkillIndex::Remove(const std::string& id) {
  std::unique_lock<std::shared_mutex> lock(mu_);
  auto it = by_id_.find(id);
  if (it == by_id_.end()) return;
  const DocId d = it->second;
  by_id_.erase(it);
  by_name_.erase(NameKey(docs_[d].skill.owner, docs_[d].skill.name));
  bm25_.Remove(d);
  vectors_.Remove(d);
  docs_[d] = Doc{};
}

std::optional<SkillSummary> SkillIndex::Get(const std::string& id) const {
  std::shared_lock<std::shared_mutex> lock(mu_);
  auto it = by_id_.find(id);
  if (it == by_id_.end()) return std::nullopt;
  return docs_[it->second].skill;
}

std::optional<std::string> SkillIndex::IdByName(const std::string& owner,
                                                const std::string& name) const {
  std::shared_lock<std::shared_mutex> lock(mu_);
  auto it = by_name_.find(NameKey(owner, name));
  if (it == by_name_.end()) return std::nullopt;
  return docs_[it->second].skill.id;
}

std::vector<SkillHit> SkillIndex::Search(const SkillQuery& q) const {
  std::shared_lock<std::shared_mutex> lock(mu_);
  std::vector<SkillHit> hits;
  auto owned = by_owner_.find(q.user_id);
  if (owned == by_owner_.end() || q.k == 0) return hits;
  std::vector<DocId> candidates;
  for (DocId d : owned->second) {
    const Doc& doc = docs_[d];
    if (doc.live && doc.skill.owner == q.user_id &&
        (q.agent_id.empty() || doc.skill.agent_id == q.agent_id)) {
      candidates.push_back(d);
    }
  }
  std::sort(candidates.begin(), candidates.end());
  candidates.erase(std::unique(candidates.begin(), candidates.end()), candidates.end());
  if (candidates.empty()) return hits;
  std::vector<uint8_t> allowed(docs_.size(), 0);
  for (DocId d : candidates) allowed[d] = 1;
  const std::function<bool(DocId)> in_candidates = [&allowed](DocId d) { return allowed[d] != 0; };
  const size_t per_retriever = std::max(q.k, options_.candidates);
  std::vector<ScoredDoc> lexical = bm25_.Search(q.terms, per_retriever, &in_candidates);
  std::vector<ScoredDoc> semantic;
  if (!q.vector.empty() && static_cast<int>(q.vector.size()) == vectors_.dim()) {
    semantic = vectors_.SearchAmong(q.vector.data(), per_retriever, candidates);
  }
  for (const ScoredDoc& s : Fuse(lexical, semantic, q.k, options_.fusion)) {
    hits.push_back({docs_[s.doc].skill, std::clamp(s.score, 0.0f, 1.0f)});
  }
  return hits;
}

size_t SkillIndex::size() const {
  std::shared_lock<std::shared_mutex> lock(mu_);
  return by_id_.size();
}

size_t SkillIndex::MemoryBytes() const {
  std::shared_lock<std::shared_mutex> lock(mu_);
  // Strings beyond the small-string buffer and libstdc++ hash nodes (next pointer, cached hash,
  // value) with their bucket arrays, as MemoryShard::MemoryBytes counts them.
  constexpr size_t kSsoCapacity = 15;
  constexpr size_t kNode = 2 * sizeof(void*);
  auto heap = [](const std::string& s) {
    return s.capacity() > kSsoCapacity ? s.capacity() + 1 : 0;
  };
  size_t bytes = bm25_.MemoryBytes() + vectors_.MemoryBytes() + docs_.capacity() * sizeof(Doc);
  for (const Doc& d : docs_) {
    const SkillSummary& s = d.skill;
    bytes += heap(s.id) + heap(s.name) + heap(s.description) + heap(s.version) + heap(s.owner) +
             heap(s.agent_id);
  }
  for (const auto* map : {&by_id_, &by_name_}) {
    bytes += map->bucket_count() * sizeof(void*);
    for (const auto& [key, doc] : *map) bytes += kNode + sizeof(*map->begin()) + heap(key);
  }
  bytes += by_owner_.bucket_count() * sizeof(void*);
  for (const auto& [owner, ids] : by_owner_) {
    bytes += kNode + sizeof(*by_owner_.begin()) + heap(owner) + ids.capacity() * sizeof(DocId);
  }
  return bytes;
}

}  // namespace engram
