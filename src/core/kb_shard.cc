#include "core/kb_shard.h"

#include <algorithm>

namespace engram {

std::string KbIndexedText(const std::string& heading, const std::string& text) {
  return heading.empty() ? text : heading + "\n" + text;
}

KbShard::KbShard(const Analyzer* analyzer, KbShardOptions options)
    : analyzer_(analyzer),
      options_(std::move(options)),
      bm25_(options_.bm25),
      vectors_(options_.vectors) {}

Status KbShard::EnsureLoaded(Store* store, const std::string& workspace, const std::string& kb_id) {
  std::lock_guard<std::mutex> lock(load_mu_);
  if (loaded_) return Status::Ok();
  auto chunks = store->LoadKbChunks(workspace, kb_id);
  if (!chunks.ok()) return chunks.status();
  std::vector<std::vector<std::string>> terms;
  terms.reserve(chunks->size());
  for (const auto& c : *chunks)
    terms.push_back(analyzer_->Analyze(KbIndexedText(c.heading, c.text)));
  std::unique_lock<std::shared_mutex> write(mu_);
  for (size_t i = 0; i < chunks->size(); ++i) AddLocked((*chunks)[i], terms[i]);
  loaded_ = true;
  return Status::Ok();
}

void KbShard::AddLocked(const KbChunkRecord& c, const std::vector<std::string>& terms) {
  DocId d;
  if (!free_.empty()) {
    d = free_.back();
    free_.pop_back();
  } else {
    d = static_cast<DocId>(chunks_.size());
    chunks_.emplace_back();
  }
  chunks_[d] = Chunk{c.doc_id, c.title, c.heading, c.text, c.position, true};
  by_doc_[c.doc_id].push_back(d);
  bm25_.Add(d, terms);
  if (!c.vector.empty() && c.vector_model == options_.vector_model &&
      static_cast<int>(c.vector.size()) == vectors_.dim()) {
    vectors_.Set(d, c.vector.data());
  } else {
    vectors_.Remove(d);
  }
}

void KbShard::RemoveDocLocked(const std::string& doc_id) {
  auto it = by_doc_.find(doc_id);
  if (it == by_doc_.end()) return;
  for (DocId d : it->second) {
    bm25_.Remove(d);
    vectors_.Remove(d);
    chunks_[d] = Chunk{};
    free_.push_back(d);
  }
  by_doc_.erase(it);
}

void KbShard::ReplaceDoc(const std::string& doc_id, const std::vector<KbChunkRecord>& chunks) {
  // Analysis is the expensive part: outside the writer lock, so searches keep running.
  std::vector<std::vector<std::string>> terms;
  terms.reserve(chunks.size());
  for (const auto& c : chunks)
    terms.push_back(analyzer_->Analyze(KbIndexedText(c.heading, c.text)));
  std::unique_lock<std::shared_mutex> lock(mu_);
  RemoveDocLocked(doc_id);
  for (size_t i = 0; i < chunks.size(); ++i) AddLocked(chunks[i], terms[i]);
}

void KbShard::RemoveDoc(const std::string& doc_id) {
  std::unique_lock<std::shared_mutex> lock(mu_);
  RemoveDocLocked(doc_id);
}

std::vector<KbHit> KbShard::Search(const std::vector<std::string>& terms,
                                   const std::vector<float>& vector, size_t k) const {
  std::shared_lock<std::shared_mutex> lock(mu_);
  std::vector<KbHit> hits;
  if (k == 0) return hits;
  const size_t per_retriever = std::max(k, options_.candidates);
  std::vector<ScoredDoc> lexical = bm25_.Search(terms, per_retriever);
  std::vector<ScoredDoc> semantic;
  if (!vector.empty() && static_cast<int>(vector.size()) == vectors_.dim()) {
    semantic = vectors_.Search(vector.data(), per_retriever);
  }
  for (const ScoredDoc& s : Fuse(lexical, semantic, k, options_.fusion)) {
    const Chunk& c = chunks_[s.doc];
    if (!c.live) continue;
    hits.push_back(
        {c.doc_id, c.title, c.heading, c.text, c.position, std::clamp(s.score, 0.0f, 1.0f)});
  }
  return hits;
}

size_t KbShard::MemoryBytes() const {
  std::shared_lock<std::shared_mutex> lock(mu_);
  // Strings beyond the small-string buffer and libstdc++ hash nodes (next pointer, cached hash,
  // value) with their bucket arrays, as MemoryShard::MemoryBytes counts them.
  constexpr size_t kSsoCapacity = 15;
  constexpr size_t kNode = 2 * sizeof(void*);
  auto heap = [](const std::string& s) {
    return s.capacity() > kSsoCapacity ? s.capacity() + 1 : 0;
  };
  size_t bytes = bm25_.MemoryBytes() + vectors_.MemoryBytes() + chunks_.capacity() * sizeof(Chunk) +
                 free_.capacity() * sizeof(DocId);
  for (const Chunk& c : chunks_) {
    bytes += heap(c.doc_id) + heap(c.title) + heap(c.heading) + heap(c.text);
  }
  bytes += by_doc_.bucket_count() * sizeof(void*);
  for (const auto& [doc_id, ids] : by_doc_) {
    bytes += kNode + sizeof(*by_doc_.begin()) + heap(doc_id) + ids.capacity() * sizeof(DocId);
  }
  return bytes;
}

size_t KbShard::chunk_count() const {
  std::shared_lock<std::shared_mutex> lock(mu_);
  return chunks_.size() - free_.size();
}

}  // namespace engram
