#include "core/kb_shard.h"

#include <algorithm>

#include "common/heap_release.h"
#include "common/memory_bytes.h"

namespace engram {

std::string KbIndexedText(const std::string& heading, const std::string& text) {
  return heading.empty() ? text : heading + "\n" + text;
}

KbShard::KbShard(const Analyzer* analyzer, KbShardOptions options)
    : analyzer_(analyzer),
      options_(std::move(options)),
      index_(HybridIndexOptions{.bm25 = options_.bm25,
                                .vectors = options_.vectors,
                                .vector_model = options_.vector_model,
                                .reuse_slots = true}) {}

Status KbShard::EnsureLoaded(KbStore* store, const std::string& workspace,
                             const std::string& kb_id) {
  ReleaseHeapOnExit release;  // once the chunks below are freed
  MutexLock lock(&load_mu_);
  if (loaded_) return Status::Ok();
  auto chunks = store->LoadKbChunks(workspace, kb_id);
  if (!chunks.ok()) return chunks.status();
  release.Held(chunks->size());
  std::vector<std::vector<std::string>> terms;
  terms.reserve(chunks->size());
  for (const auto& c : *chunks)
    terms.push_back(analyzer_->Analyze(KbIndexedText(c.heading, c.text)));
  WriterLock write(&mu_);
  HybridIndex::Batch batch(&index_);
  for (size_t i = 0; i < chunks->size(); ++i) AddLocked((*chunks)[i], terms[i]);
  loaded_ = true;
  return Status::Ok();
}

void KbShard::AddLocked(const KbChunkRecord& c, const std::vector<std::string>& terms) {
  const DocId d =
      index_.Add(HybridDoc{.terms = &terms, .vector = c.vector, .vector_model = c.vector_model});
  if (chunks_.size() < index_.slot_count()) chunks_.resize(index_.slot_count());
  chunks_[d] = Chunk{c.doc_id, c.title, c.heading, c.text, c.position};
  by_doc_[c.doc_id].push_back(d);
}

void KbShard::RemoveDocLocked(const std::string& doc_id) {
  auto it = by_doc_.find(doc_id);
  if (it == by_doc_.end()) return;
  for (DocId d : it->second) {
    index_.RemoveSlot(d);
    chunks_[d] = Chunk{};
  }
  by_doc_.erase(it);
}

void KbShard::ReplaceDoc(const std::string& doc_id, const std::vector<KbChunkRecord>& chunks) {
  // Analysis is the expensive part: outside the writer lock, so searches keep running.
  std::vector<std::vector<std::string>> terms;
  terms.reserve(chunks.size());
  for (const auto& c : chunks)
    terms.push_back(analyzer_->Analyze(KbIndexedText(c.heading, c.text)));
  WriterLock lock(&mu_);
  // One batch: the graph takes the new chunks in one pass, and a saved graph file has the old
  // chunks' codes (if still here) zeroed in one rewrite, a document's chunks sitting side by side
  // in a few 1 MiB blocks, instead of one block rewrite per chunk.
  HybridIndex::Batch batch(&index_);
  RemoveDocLocked(doc_id);
  for (size_t i = 0; i < chunks.size(); ++i) AddLocked(chunks[i], terms[i]);
}

void KbShard::RemoveDoc(const std::string& doc_id) {
  WriterLock lock(&mu_);
  HybridIndex::Batch batch(&index_);
  RemoveDocLocked(doc_id);
}

std::vector<KbHit> KbShard::Search(const std::vector<std::string>& terms,
                                   const std::vector<float>& vector, size_t k, bool explain) const {
  ReaderLock lock(&mu_);
  std::vector<KbHit> hits;
  HybridQuery query;
  query.terms = &terms;
  query.vector = vector;
  query.k = k;
  query.candidates = options_.candidates;
  query.fusion = options_.fusion;
  query.explain = explain;
  const HybridHits found = index_.Search(query);
  for (const ScoredDoc& s : found.ranked) {
    const Chunk& c = chunks_[s.doc];
    KbHit hit{c.doc_id, c.title, c.heading, c.text, c.position, std::clamp(s.score, 0.0f, 1.0f)};
    if (explain) hit.explain = Explain(found, s.doc, query.fusion.method, hit.score);
    hits.push_back(std::move(hit));
  }
  return hits;
}

size_t KbShard::MemoryBytes() const {
  ReaderLock lock(&mu_);
  // Strings beyond the small-string buffer and hash nodes with their bucket arrays
  // (common/memory_bytes.h).
  size_t bytes = index_.MemoryBytes() + chunks_.capacity() * sizeof(Chunk);
  for (const Chunk& c : chunks_) {
    bytes += StringHeapBytes(c.doc_id) + StringHeapBytes(c.title) + StringHeapBytes(c.heading) +
             StringHeapBytes(c.text);
  }
  bytes += by_doc_.bucket_count() * sizeof(void*);
  for (const auto& [doc_id, ids] : by_doc_) {
    bytes += kHashNodeBytes + sizeof(*by_doc_.begin()) + StringHeapBytes(doc_id) +
             ids.capacity() * sizeof(DocId);
  }
  return bytes;
}

size_t KbShard::chunk_count() const {
  ReaderLock lock(&mu_);
  return index_.size();
}

Status KbShard::SaveGraph() {
  WriterLock lock(&mu_);
  return index_.SaveGraph();
}

void KbShard::DiscardGraph() {
  WriterLock lock(&mu_);
  index_.DiscardSavedGraph();
}

}  // namespace engram
