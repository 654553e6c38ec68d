// HybridIndex: the search core every domain instantiates (Leaderboard scopes, V4 memories,
// knowledge-base chunks, skills). It owns what they all need and used to repeat: dense document
// slots (optionally reused after removal), the map from a domain's id (and the store's row
// sequence) to a slot, a BM25 index and an int8 vector index over the slots, the rule for which
// vectors enter (the configured model, the index's dimension), and one hybrid search: BM25 and
// vector candidates, confined to a slot set and a lazily asked filter, fused into one ranking.
//
// The domain keeps what is its own beside it, in arrays indexed by the same slots: the document
// payload it renders, its scope or owner indexes, a session's turn order (TurnOrder), its filter
// grammar. A slot is valid from Add / Upsert until Remove; slot_count() bounds every slot given
// out, so payload arrays sized to it can be indexed by any search result.
//
// Thread-safety: not thread-safe. The owning shard serialises writers against everything else with
// its own lock (a reader lock for Search, a writer lock for changes); concurrent const calls are
// safe when no writer runs. Search keeps its scratch space in thread_local storage.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "index/bm25_index.h"
#include "index/fusion.h"
#include "index/vector_index.h"

namespace engram {

struct HybridIndexOptions {
  Bm25Options bm25;
  VectorIndexOptions vectors;
  std::string vector_model;  // vectors of other models are not indexed (the domain re-embeds)
  // Give a removed document's slot to the next one added. Right for domains whose side indexes
  // drop a document's slots at once (chunk groups); wrong for those whose side lists keep stale
  // slots and check them on use (a reused slot would then be another scope's document).
  bool reuse_slots = false;
};

// A document as a domain hands it to the index.
struct HybridDoc {
  const std::vector<std::string>* terms = nullptr;  // analysed text (null: no terms)
  std::span<const float> vector;                    // empty: none
  std::string_view vector_model;                    // the model `vector` came from
  std::optional<int64_t> seq;  // the store's row sequence, by which background vectors arrive
};

// What Upsert does with an existing document's vector when the new version brings none of the
// index's model.
enum class MissingVector {
  kClear,  // the text changed: the old vector no longer describes it
  kKeep,   // only metadata changed: the vector of the unchanged text stays valid
};

struct HybridQuery {
  const std::vector<std::string>* terms = nullptr;  // analysed query; null: no BM25
  std::span<const float> vector;  // empty, or another dimension: no vector retrieval
  size_t k = 10;                  // fused results wanted
  size_t candidates = 200;        // taken from each retriever before fusion (at least k)
  FusionOptions fusion;
  // When set (sorted slots), only these slots can be returned: the vector scan visits them alone
  // and BM25 skips every other posting.
  const std::vector<DocId>* among = nullptr;
  // When set, a slot is returned only if admits(slot); asked lazily, only about slots good
  // enough to enter a retriever's current top-k (and only about slots in `among`, when given).
  const std::function<bool(DocId)>* admits = nullptr;
  // When set, 0..1 per candidate, weighted by fusion.prior_weight (e.g. closeness to a date).
  const std::function<float(DocId)>* prior = nullptr;
  // When set, a factor per candidate applied to its fused score before the top k are kept.
  const std::function<float(DocId)>* scale = nullptr;
  // The caller's `admits` rejects every slot outside `among`: BM25 then needs no membership
  // table of its own (a table of the index's size marked and cleared per search).
  bool admits_covers_among = false;
  // When set, BM25 scores with these statistics instead of the whole index's (Bm25Stats: a
  // search confined to one user's documents ranks as if they were the collection).
  const Bm25Stats* bm25_stats = nullptr;
  // When set, this ranking replaces plain BM25 as the lexical list (a domain's own lexical
  // ranker over bm25(), such as conversation windows); it must respect `among` and `admits`.
  const std::vector<ScoredDoc>* lexical = nullptr;
  bool use_bm25 = true;       // false: vectors only
  bool keep_cosines = false;  // fill HybridHits::cosines
  bool explain = false;       // fill HybridHits::parts
  // Evidence of relevance: when above 0, a fused result is kept only if the lexical list holds it
  // (it shares a query term, or its window does) or its cosine with the query is at least this.
  // Fusion still sees every candidate, so the results kept are ranked as they would be without
  // it; only the tail of results nothing ties to the query goes.
  float relevance_floor = 0;
};

struct HybridHits {
  std::vector<ScoredDoc> ranked;  // fused, best first (k at most)
  // The vector retriever's candidates with their cosine, sorted by slot (when keep_cosines).
  std::vector<ScoredDoc> cosines;
  // How each fused result got its score, sorted by slot (when explain).
  std::vector<FusionParts> parts;
  // The cosine of the query and `doc`'s vector when the vector retriever returned it.
  std::optional<float> CosineOf(DocId doc) const;
  // `doc`'s parts when explained and fused, else null.
  const FusionParts* PartsOf(DocId doc) const { return FindParts(parts, doc); }
};

class HybridIndex {
 public:
  // Heterogeneous lookup, so finding a key does not copy it into a std::string.
  struct KeyHash {
    using is_transparent = void;
    size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
  };

  explicit HybridIndex(HybridIndexOptions options);
  HybridIndex(const HybridIndex&) = delete;
  HybridIndex& operator=(const HybridIndex&) = delete;

  // Groups the changes of its lifetime so the vector graph catches up once, at its end
  // (VectorIndex::BeginBatch): for a load, a batch of vectors or a batch of changes. Lives under
  // the owner's writer lock; batches do not nest.
  class Batch {
   public:
    explicit Batch(HybridIndex* index) : index_(index) { index_->vectors_.BeginBatch(); }
    ~Batch() { index_->vectors_.EndBatch(); }
    Batch(const Batch&) = delete;
    Batch& operator=(const Batch&) = delete;

   private:
    HybridIndex* index_;
  };

  // Adds a document without a key (the domain tracks its slot, e.g. a chunk of a group).
  DocId Add(const HybridDoc& doc);
  // Inserts the document under `key`, or replaces the one there (same slot). `*inserted` (may be
  // null) says which.
  DocId Upsert(std::string_view key, const HybridDoc& doc,
               MissingVector missing = MissingVector::kClear, bool* inserted = nullptr);
  // Removes the document under `key`; returns its former slot (for the domain to clear its
  // payload), nullopt when absent.
  std::optional<DocId> Remove(std::string_view key);
  // Removes the document in `slot` (added with Add or Upsert); a no-op when it is not live.
  void RemoveSlot(DocId slot);

  std::optional<DocId> Find(std::string_view key) const;
  std::optional<DocId> FindSeq(int64_t seq) const;
  bool live(DocId slot) const { return slot < live_.size() && live_[slot] != 0; }

  // Whether a vector of `model` with `dim` values enters this index.
  bool Accepts(std::string_view model, size_t dim) const;
  // Sets `slot`'s vector when Accepts(model, size); returns whether it did. A live slot only.
  bool SetVector(DocId slot, std::string_view model, std::span<const float> vector);
  bool HasVector(DocId slot) const { return vectors_.Contains(slot); }

  // The vector graph kept between loads (VectorIndex::SaveGraph, DiscardSavedGraph): writes.
  Status SaveGraph() { return vectors_.SaveGraph(); }
  void DiscardSavedGraph() { vectors_.DiscardSavedGraph(); }

  // The ranked documents for `query` (see HybridQuery).
  HybridHits Search(const HybridQuery& query) const;

  // Live documents.
  size_t size() const { return live_count_; }
  // One past the largest slot ever given out: payload arrays of this size take any slot.
  size_t slot_count() const { return live_.size(); }
  int dim() const { return vectors_.dim(); }

  // For domains' own rankers (conversation windows) and their tests.
  const Bm25Index& bm25() const { return bm25_; }
  const VectorIndex& vectors() const { return vectors_; }

  // Approximate resident bytes: BM25 postings, vectors, keys and slot maps.
  size_t MemoryBytes() const;

 private:
  DocId NewSlot();
  void IndexLocked(DocId slot, const HybridDoc& doc, MissingVector missing);

  HybridIndexOptions options_;
  Bm25Index bm25_;
  VectorIndex vectors_;
  std::vector<uint8_t> live_;               // per slot
  std::vector<int64_t> seq_of_;             // per slot; kNoSeq when none
  std::vector<const std::string*> key_of_;  // per slot: the key in by_key_, or null
  std::vector<DocId> free_;                 // reusable slots (reuse_slots)
  std::unordered_map<std::string, DocId, KeyHash, std::equal_to<>> by_key_;  // live, keyed
  std::unordered_map<int64_t, DocId> by_seq_;  // live documents with a seq
  size_t live_count_ = 0;
};

}  // namespace engram
