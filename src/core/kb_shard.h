// KbShard: the in-memory search state of one knowledge base (workspace + kb_id): its documents'
// chunks in a HybridIndex (BM25 and vectors, fused like memory search), grouped by document. A
// cache of the store, loaded on first use.
//
// A document's chunks enter and leave together: ReplaceDoc swaps every chunk of a document under
// one write lock and RemoveDoc takes them all out at once, so a search never sees half a document.
//
// Thread-safety: all methods are safe to call concurrently; searches share a lock, writes take it
// exclusively.
#pragma once

#include <atomic>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "common/mutex.h"
#include "core/search_explanation.h"
#include "index/analyzer.h"
#include "index/fusion.h"
#include "index/hybrid_index.h"
#include "store/kb_store.h"

namespace engram {

struct KbShardOptions {
  Bm25Options bm25;
  VectorIndexOptions vectors;
  FusionOptions fusion;
  std::string vector_model;  // chunk vectors of other models are ignored
  size_t candidates = 200;   // taken from each retriever before fusion (at least k)
};

struct KbHit {
  std::string doc_id;
  std::string title;
  std::string heading;
  std::string chunk;
  int position = 0;
  float score = 0;                           // fused relevance, 0..1
  std::optional<SearchExplanation> explain;  // when the search asked
};

class KbShard {
 public:
  KbShard(const Analyzer* analyzer, KbShardOptions options);

  // Loads the knowledge base's chunks once; a failed load is retried on the next call.
  Status EnsureLoaded(KbStore* store, const std::string& workspace, const std::string& kb_id);
  // Whether EnsureLoaded has finished (any thread, no lock).
  bool loaded() const { return loaded_.load(std::memory_order_acquire); }

  // Replaces every chunk of chunks' document(s) by `chunks` (all of one document, `doc_id`).
  void ReplaceDoc(const std::string& doc_id, const std::vector<KbChunkRecord>& chunks);
  void RemoveDoc(const std::string& doc_id);

  // Best chunks first; `explain`: each hit says how it got its score.
  std::vector<KbHit> Search(const std::vector<std::string>& terms, const std::vector<float>& vector,
                            size_t k, bool explain = false) const;

  size_t chunk_count() const;
  // The vector graph kept between loads (options.vectors.graph_file; ShardCache calls these):
  // saves it, or removes it for good (ShardCache::Drop).
  Status SaveGraph() EXCLUDES(mu_);
  void DiscardGraph() EXCLUDES(mu_);
  // Approximate resident bytes: chunk texts and titles, BM25 postings, vectors and the document
  // index (for the shard memory budget).
  size_t MemoryBytes() const;

 private:
  struct Chunk {
    std::string doc_id;
    std::string title;
    std::string heading;
    std::string text;
    int position = 0;
  };
  void RemoveDocLocked(const std::string& doc_id) REQUIRES(mu_);
  void AddLocked(const KbChunkRecord& c, const std::vector<std::string>& terms) REQUIRES(mu_);

  const Analyzer* analyzer_;
  KbShardOptions options_;
  Mutex load_mu_;
  std::atomic<bool> loaded_{false};  // written under load_mu_; read by loaded()

  mutable SharedMutex mu_;
  HybridIndex index_ GUARDED_BY(mu_);          // chunk slots are reused once a document leaves
  std::vector<Chunk> chunks_ GUARDED_BY(mu_);  // by index_ slot
  std::unordered_map<std::string, std::vector<DocId>> by_doc_ GUARDED_BY(mu_);
};

// The text a chunk is indexed (and embedded) under: its section heading, then its text.
std::string KbIndexedText(const std::string& heading, const std::string& text);

}  // namespace engram
