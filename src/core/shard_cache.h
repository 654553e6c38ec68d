// ShardCache<Shard>: the in-memory shards of one domain by key, the one cache the Leaderboard
// scopes, V4 memory workspaces, knowledge bases and skill indexes all use.
//
// A shard is created on first use (Hold) and loaded by its users outside the cache's lock, so a
// load holds up no other key (the shard's own load runs once; concurrent users wait for it there).
// On a shared store a shard made at an older version of its scope than the caller read is
// replaced by a new one (whoever still holds the old one finishes on it). Every shard joins the
// one ShardBudget (--shard-memory-mb) under its domain, is stamped on every use, and is dropped by
// the budget when idle: nothing but the cache holds it (no search, write or background job), so a
// dropped shard is simply loaded again on its next use, from the store that has every
// acknowledged write. Loaded() is the non-blocking probe an HTTP I/O thread asks before a search.
//
// Shard provides `bool loaded() const` (its load finished) and `size_t MemoryBytes() const`.
// A shard with a vector graph worth keeping also provides `Status SaveGraph()` and
// `void DiscardGraph()` (ScopeShard, MemoryShard, KbShard): a shard the budget drops has its graph
// saved by the cache's GraphSaver thread, so its next load starts from it and the eviction does not
// wait for the write (until written, the dropped shard stays counted in the budget, and a load of
// its key waits for the file); SaveGraphs saves every resident one (at shutdown); a deleted scope's
// data is gone, so Drop discards the graph of its resident shard and of every dropped one not yet
// saved.
//
// Thread-safety: safe for concurrent use. The budget (if any) must outlive the cache. Shards are
// shared: the cache never destroys one a caller holds. The destructor waits for the graph saves of
// shards it dropped.
#pragma once

#include <atomic>
#include <chrono>
#include <concepts>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "common/mutex.h"
#include "common/status.h"
#include "core/graph_saver.h"
#include "core/shard_budget.h"
#include "core/shard_graphs.h"

namespace engram {

template <typename Shard>
class ShardCache {
 public:
  // Makes an empty, not yet loaded shard for a key.
  using Make = std::function<std::shared_ptr<Shard>(const std::string& key)>;

  // `budget` may be null: shards are then never dropped.
  ShardCache(ShardDomain domain, ShardBudget* budget, Make make)
      : domain_(domain), budget_(budget), make_(std::move(make)) {
    if (budget_ != nullptr) {
      if constexpr (kKeepsGraphs) saver_ = std::make_unique<GraphSaver>(GraphSaverOptions{});
      budget_id_ = budget_->AddCache(
          domain, [this](const std::string& key, uint64_t id) { return EvictIfIdle(key, id); });
    }
  }
  ~ShardCache() {
    if (budget_ != nullptr) budget_->RemoveCache(budget_id_);
  }
  ShardCache(const ShardCache&) = delete;
  ShardCache& operator=(const ShardCache&) = delete;

  struct Held {
    std::shared_ptr<Shard> shard;  // held: the budget does not drop it while the caller has it
    bool created = false;          // made by this call (the caller's load is its first)
  };
  // The key's shard, made now when there is none or the one there was made at a version older
  // than `version` (a shared store's scope version; 0 elsewhere). The caller loads it if it is
  // not loaded, then calls Used.
  Held Hold(const std::string& key, int64_t version = 0) EXCLUDES(mu_) {
    Held held;
    {
      MutexLock lock(&mu_);
      auto it = slots_.find(key);
      if (it == slots_.end() || it->second.version < version) {
        Slot& slot = slots_[key];
        // A replaced shard's Resident leaves the budget here.
        slot.shard = make_(key);
        slot.version = version;
        if (budget_ != nullptr) {
          slot.budget = budget_->Admit(budget_id_, key,
                                       [weak = std::weak_ptr<Shard>(slot.shard)]() -> size_t {
                                         auto s = weak.lock();
                                         return s && s->loaded() ? s->MemoryBytes() : 0;
                                       });
        }
        held.created = true;
        it = slots_.find(key);
      }
      it->second.budget.Touch();
      held.shard = it->second.shard;
    }
    // A shard to load whose key was just evicted: the load waits for that shard's graph to be
    // written, and takes it back.
    if (!held.shard->loaded()) AwaitSaves(key);
    return held;
  }

  // After a use of a held shard (`loaded_now`: this use loaded it): lets the budget enforce its
  // limit (after every load, and every so many uses). Call with no lock held.
  void Used(bool loaded_now) {
    if (budget_ != nullptr) budget_->OnUse(loaded_now);
  }

  // The non-blocking probe: whether the key's shard is resident and loaded, so a use answers
  // without a load. Takes only the cache's lock, briefly.
  bool Loaded(const std::string& key) const {
    MutexLock lock(&mu_);
    auto it = slots_.find(key);
    return it != slots_.end() && it->second.shard->loaded();
  }

  // The key's shard if it is resident and loaded (stamped as used), else null; never makes or
  // loads one.
  std::shared_ptr<Shard> Resident(const std::string& key) const {
    MutexLock lock(&mu_);
    auto it = slots_.find(key);
    if (it == slots_.end() || !it->second.shard->loaded()) return nullptr;
    it->second.budget.Touch();
    return it->second.shard;
  }

  // Forgets the key's shard (its data was deleted): the next Hold makes it afresh. A graph the
  // shard kept is discarded, even if a caller still holds the shard.
  void Drop(const std::string& key) EXCLUDES(mu_) {
    std::vector<std::shared_ptr<Shard>> dropped;
    {
      MutexLock lock(&mu_);
      auto it = slots_.find(key);
      if (it != slots_.end()) {
        dropped.push_back(std::move(it->second.shard));
        slots_.erase(it);
      }
      // Evicted shards whose graph is not saved yet: a waiting save becomes a no-op, a running one
      // finishes first (both take the shard's writer lock) and the discard removes its file.
      for (auto [s, end] = unsaved_.equal_range(key); s != end; ++s) {
        if (auto shard = s->second.lock()) dropped.push_back(std::move(shard));
      }
    }
    if constexpr (kKeepsGraphs) {
      for (const auto& shard : dropped) shard->DiscardGraph();
    }
  }

  struct GraphsSaved {
    size_t saved = 0;   // shards whose graph was written or already on disk
    size_t failed = 0;  // the first failure's status in `first_error`
    Status first_error;
  };
  // Saves the vector graph of every resident, loaded shard (see the file comment), after the
  // saves of the shards the budget dropped; outside the cache's lock, one shard at a time. Logs
  // what it saved (LogGraphsSaved).
  GraphsSaved SaveGraphs() EXCLUDES(mu_) {
    GraphsSaved out;
    if constexpr (kKeepsGraphs) {
      const auto started = std::chrono::steady_clock::now();
      FlushGraphSaves();
      std::vector<std::shared_ptr<Shard>> resident;
      {
        MutexLock lock(&mu_);
        for (const auto& [key, slot] : slots_) {
          if (slot.shard->loaded()) resident.push_back(slot.shard);
        }
      }
      for (const auto& shard : resident) {
        Status st = saver_ ? saver_->Save([&] { return shard->SaveGraph(); }) : shard->SaveGraph();
        if (st.ok()) {
          ++out.saved;
        } else if (out.failed++ == 0) {
          out.first_error = std::move(st);
        }
      }
      LogGraphsSaved(domain_, out.saved, out.failed, out.first_error, started);
    }
    return out;
  }

  // Returns once the graphs of the shards the budget dropped so far are saved (or failed).
  void FlushGraphSaves() {
    if (saver_) saver_->Flush();
  }

  // fn(key, shard) for every resident shard, loaded or not, under the cache's lock: fn must be
  // quick and must not call back into the cache.
  template <typename F>
  void ForEach(F fn) const {
    MutexLock lock(&mu_);
    for (const auto& [key, slot] : slots_) fn(key, slot.shard);
  }

  size_t size() const {
    MutexLock lock(&mu_);
    return slots_.size();
  }
  // Shards the budget dropped since start.
  int64_t evictions() const { return evictions_.load(); }

 private:
  struct Slot {
    std::shared_ptr<Shard> shard;
    int64_t version = 0;           // the scope version it was made at (shared stores; else 0)
    ShardBudget::Resident budget;  // empty without a budget
  };

  static constexpr bool kKeepsGraphs = requires(Shard & s) {
    { s.SaveGraph() } -> std::same_as<Status>;
    s.DiscardGraph();
  };

  // The budget's evictor: drops the shard admitted as `id` under `key` if only the cache holds
  // it, and hands its graph to the saver (a saver with no room makes the eviction wait). A failed
  // save costs the shard's next load a build.
  bool EvictIfIdle(const std::string& key, uint64_t id) EXCLUDES(mu_) {
    std::shared_ptr<Shard> evicted;
    {
      MutexLock lock(&mu_);
      evicted = TakeIfIdle(slots_, key, id, &Slot::shard);
      if (evicted == nullptr) return false;
      if (saver_) unsaved_.emplace(key, evicted);
    }
    evictions_.fetch_add(1);
    if constexpr (kKeepsGraphs) {
      if (saver_) {
        // Saved in the background, the shard stays in memory, so it stays in the budget until
        // its graph is written (under an entry its evictor finds no slot for). Its size is read
        // once, now: the save holds the shard's writer lock, which reading it would wait for, and
        // the budget's enforcement with it.
        const size_t bytes = evicted->loaded() ? evicted->MemoryBytes() : 0;
        auto pending = std::make_shared<ShardBudget::Resident>(
            budget_->Admit(budget_id_, key, [bytes]() -> size_t { return bytes; }));
        saver_->Enqueue([this, key, shard = std::move(evicted), pending = std::move(pending)] {
          Status st = shard->loaded() ? shard->SaveGraph() : Status::Ok();
          if (!st.ok()) budget_->CountGraphSaveFailure(domain_);
          MutexLock lock(&mu_);
          for (auto [it, end] = unsaved_.equal_range(key); it != end; ++it) {
            if (it->second.lock() == shard) {
              unsaved_.erase(it);
              break;
            }
          }
          saved_.SignalAll();
          return st;
        });
      }
    }
    return true;
  }

  // Waits until no evicted shard of `key` has a graph still to write, so a load that follows
  // takes the graph back from the file instead of building it (seconds against minutes).
  void AwaitSaves(const std::string& key) EXCLUDES(mu_) {
    if (!saver_) return;
    MutexLock lock(&mu_);
    while (unsaved_.count(key) > 0) saved_.Wait(&mu_);
  }

  const ShardDomain domain_;
  ShardBudget* const budget_;
  const Make make_;
  ShardBudget::CacheId budget_id_ = 0;
  mutable Mutex mu_;
  std::map<std::string, Slot> slots_ GUARDED_BY(mu_);
  // Evicted shards whose graph is not saved yet (kKeepsGraphs), for Drop; a key may have several.
  std::multimap<std::string, std::weak_ptr<Shard>> unsaved_ GUARDED_BY(mu_);
  CondVar saved_;  // an unsaved_ entry left
  std::atomic<int64_t> evictions_{0};
  // Saves evicted shards' graphs (kKeepsGraphs with a budget); declared last, so it is destroyed,
  // and its waiting jobs run, while the members they use are still alive.
  std::unique_ptr<GraphSaver> saver_;
};

}  // namespace engram
