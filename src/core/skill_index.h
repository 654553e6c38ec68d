// SkillIndex: the in-memory search state of one workspace's skills: a HybridIndex with BM25 over
// each skill's name, description, triggers, tags and SKILL.md body and its intent vector (name,
// description, triggers, tags), and an index from owner to skills so a search confined to one
// user scans only that user's skills. A cache of the store; the service rebuilds it on first use.
//
// Thread-safety: all methods are safe to call concurrently (a shared lock for reads).
#pragma once

#include <atomic>
#include <cstdint>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "common/mutex.h"
#include "core/search_explanation.h"
#include "index/analyzer.h"
#include "index/fusion.h"
#include "index/hybrid_index.h"
#include "store/skill_types.h"

namespace engram {

// What search results show of a skill (files stay in the store).
struct SkillSummary {
  std::string id;
  std::string name;
  std::string description;
  std::string version;
  std::string owner;
  std::string agent_id;
  int64_t updated_at_us = 0;
};

struct SkillHit {
  SkillSummary skill;
  float score = 0;                           // fused relevance, 0..1
  std::optional<SearchExplanation> explain;  // when the query asked
};

struct SkillIndexOptions {
  Bm25Options bm25;
  VectorIndexOptions vectors;
  FusionOptions fusion;
  std::string vector_model;  // vectors of other models are ignored
  size_t candidates = 100;   // taken from each retriever before fusion (at least k)
};

struct SkillQuery {
  std::vector<std::string> terms;  // analysed query
  std::vector<float> vector;       // empty: BM25 only
  std::string user_id;             // required: only this owner's skills
  std::string agent_id;            // when non-empty, only skills of this agent
  size_t k = 10;
  bool explain = false;  // fill SkillHit::explain
};

// The text BM25 indexes, and the shorter intent text that is embedded.
std::string SkillSearchText(const SkillRecord& skill);
std::string SkillIntentText(const SkillRecord& skill);

class SkillIndex {
 public:
  SkillIndex(const Analyzer* analyzer, SkillIndexOptions options);

  // Inserts a skill or replaces the one with its id. A record without a vector of the index's
  // model leaves the skill without one (BM25 still finds it).
  void Upsert(const SkillRecord& record);
  void Remove(const std::string& id);

  std::optional<SkillSummary> Get(const std::string& id) const;
  // The id of `owner`'s skill named `name`, if any.
  std::optional<std::string> IdByName(const std::string& owner, const std::string& name) const;

  // Best first; only skills of query.user_id (and query.agent_id when set).
  std::vector<SkillHit> Search(const SkillQuery& query) const;
  // `owner`'s skills (only those of `agent_id` when non-empty), most recently updated first (ties
  // by id), from `offset`, at most `limit`; `total` gets how many there are.
  std::vector<SkillSummary> List(const std::string& owner, const std::string& agent_id,
                                 size_t offset, size_t limit, size_t* total) const;

  size_t size() const;
  // Whether the service finished filling it from the store (MarkLoaded): until then it is not
  // searched, and counts no bytes in the shard budget.
  bool loaded() const { return loaded_.load(std::memory_order_acquire); }
  void MarkLoaded() { loaded_.store(true, std::memory_order_release); }
  // Approximate resident bytes: summaries, BM25 postings, intent vectors and the id, name and
  // owner maps (for the shard memory budget).
  size_t MemoryBytes() const;

 private:
  struct Doc {
    SkillSummary skill;
  };
  static std::string NameKey(const std::string& owner, const std::string& name);

  const Analyzer* analyzer_;
  SkillIndexOptions options_;
  mutable SharedMutex mu_;
  HybridIndex index_ GUARDED_BY(mu_);                                             // skills by id
  std::vector<Doc> docs_ GUARDED_BY(mu_);                                         // by index_ slot
  std::unordered_map<std::string, DocId> by_name_ GUARDED_BY(mu_);                // owner+name
  std::unordered_map<std::string, std::vector<DocId>> by_owner_ GUARDED_BY(mu_);  // may list dead
  std::atomic<bool> loaded_{false};
};

}  // namespace engram
