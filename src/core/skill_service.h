// SkillService: the skills of the Agentic Memory API V3 (docs/api/README.md "Skills") over the
// store, per-workspace SkillIndexes, an Embedder and a SkillExtractor.
//
// Adds are asynchronous tasks, following MemoryService's events: the validated request is stored
// as a `pending` task row (durable) and queued; a worker marks it `running`, asks the extractor
// for skills, and commits the skills and the task's end state (`completed` with skill_ids, or
// `failed` with an error message) in one transaction. Unfinished tasks are queued again by
// Start() after a restart; a task whose skills could not be read from the store for a moment is
// queued again after a short pause. Imports, updates and deletes are synchronous.
//
// Names: an owner has at most one skill per name. Writing a skill whose name the owner already
// uses (import or extraction) replaces that skill's content with a new version instead of adding
// a duplicate; the replaced state is kept as a version row. All writes of one owner (tasks,
// imports, updates, deletes) take the same lock stripe, and tasks of one owner run in the order
// they were accepted.
//
// Indexes are caches of the store: under a memory budget (core/shard_budget.h) an idle
// workspace's index may be dropped and is loaded again on its next use. Every write holds its
// index from before its store commit until the index is updated, so it is not dropped in between.
//
// Thread-safety: all public methods are safe to call concurrently. Does not own the store,
// analyzer, embedder, extractor or budget; owns its indexes and worker threads.
#pragma once

#include <array>
#include <chrono>
#include <deque>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "common/clock.h"
#include "common/mutex.h"
#include "core/job_queue.h"
#include "core/shard_budget.h"
#include "core/shard_cache.h"
#include "core/skill_index.h"
#include "embed/embedder.h"
#include "extract/skill_archive.h"
#include "extract/skill_extractor.h"
#include "index/analyzer.h"
#include "store/skill_store.h"

namespace engram {

struct SkillAddRequest {
  std::string workspace;
  std::vector<ConversationMessage> messages;
  std::string user_id;
  std::string agent_id;
};

struct SkillImportRequest {
  std::string workspace;
  std::string zip;  // the decoded archive
  std::string user_id;
  std::string agent_id;
};

struct SkillSearchRequest {
  std::string workspace;
  std::string query;
  std::string user_id;
  std::string agent_id;
  size_t size = 10;
  bool explain = false;  // each hit says how it got its score (SkillHit::explain)
};

struct SkillUpdateRequest {
  std::string workspace;
  std::string id;
  std::string user_id;  // must be the owner
  std::optional<std::string> name;
  std::optional<std::string> version;
  std::optional<std::string> description;
  std::optional<std::vector<std::string>> tags;
  std::optional<std::string> agent_id;
  // Per path: new content, or nullopt to remove the file. Paths are normalised by the caller.
  std::map<std::string, std::optional<std::string>> files;
};

struct SkillServiceOptions {
  SkillIndexOptions index;
  SkillArchiveLimits archive;
  int task_workers = 1;
  size_t max_queued_tasks = 1000;  // more pending tasks → 429 until workers catch up
  // Shared stores: how often to claim tasks of nodes whose lease ran out.
  std::chrono::milliseconds job_poll_interval{2000};
  // The memory budget shared with the other shard caches; null: indexes are never dropped. Not
  // owned; it must outlive the service.
  ShardBudget* budget = nullptr;
  // Row stamps (task and skill times); null: RealClock(). Not owned; it must outlive the service.
  const Clock* clock = nullptr;
};

class SkillService {
 public:
  // `embedder` may be null (BM25 only); `extractor` must not be.
  SkillService(SkillStore* store, const Analyzer* analyzer, const Embedder* embedder,
               const SkillExtractor* extractor, SkillServiceOptions options);
  ~SkillService();  // Shutdown()

  // Queues every unfinished task of the store and starts the workers.
  Status Start();
  // Stops taking tasks; waits for the running ones. Queued tasks stay pending in the store.
  void Shutdown();

  // Stores the add as a pending task; returns its id (st-…). kThrottled when too many queue.
  Result<std::string> Add(const SkillAddRequest& request);
  Result<SkillTaskRecord> GetTask(const std::string& workspace, const std::string& id);
  // The workspace's tasks, newest first; page_number from 1; `total` gets their count. Tasks being
  // run read running, as in GetTask.
  Result<std::vector<SkillTaskRecord>> ListTasks(const std::string& workspace, size_t page_number,
                                                 size_t page_size, size_t* total);

  // Every skill of the archive, or nothing (kInvalidParameter naming the skill and the problem).
  Result<std::vector<SkillRecord>> Import(const SkillImportRequest& request);
  Result<std::vector<SkillHit>> Search(const SkillSearchRequest& request);
  // A page (from 1) of `user_id`'s skills (of `agent_id` when non-empty), most recently updated
  // first; `total` gets how many there are.
  Result<std::vector<SkillSummary>> List(const std::string& workspace, const std::string& user_id,
                                         const std::string& agent_id, size_t page_number,
                                         size_t page_size, size_t* total);
  // The non-blocking probe: whether the workspace's skill index is resident and loaded, so a search
  // of it answers without loading from the store. Takes only the cache's lock, briefly; an HTTP I/O
  // thread asks it before a search and leaves a cold workspace to a worker. (On a shared store
  // searches run on workers: one reads the version from the store first.)
  bool WorkspaceLoaded(const std::string& workspace) const;

  // Ownership: the API key (limited to workspaces) is the principal and `user_id` a scope the
  // caller may name. A call that names a user_id acts only on a skill that user owns: a skill of
  // another owner is kNotFound, the same answer as an unknown id, so ids do not leak. A call that
  // names none (nullopt) acts for the workspace, on any owner's skill.
  Result<SkillRecord> Get(const std::string& workspace, const std::string& id,
                          const std::optional<std::string>& user_id);
  // The replaced versions of a skill; call after Get or Update has checked the owner.
  Result<std::vector<SkillVersionRecord>> Versions(const std::string& workspace,
                                                   const std::string& id);
  // kNotFound unless request.user_id owns the skill; kConflict when the new name is taken.
  Result<SkillRecord> Update(const SkillUpdateRequest& request);
  // kNotFound unless the skill exists and, when `user_id` is named, that user owns it.
  Status Delete(const std::string& workspace, const std::string& id,
                const std::optional<std::string>& user_id);

  size_t queued_tasks() const;

 private:
  Result<std::shared_ptr<SkillIndex>> Index(const std::string& workspace);
  size_t OwnerStripe(const std::string& workspace, const std::string& owner) const;
  // Queues a task on its owner's stripe, so one owner's tasks run in acceptance order.
  void Enqueue(SkillTaskRecord task);
  // Shared stores: queues the tasks of dead nodes that the store hands to this node.
  void ClaimOrphanedTasks();
  void RunTask(const SkillTaskRecord& task);
  // Shows a task this node is running as running (its stored row may already read completed).
  void ShowRunning(SkillTaskRecord& task) REQUIRES(running_mu_);
  // Queues `task` again on `stripe` (its owner's) to run after a short pause: the store could not
  // be read. Holds no worker meanwhile.
  void RetryLater(const SkillTaskRecord& task, size_t stripe);
  // The change that writes `incoming` (owner, name and content set): an insert with a new id, or
  // a new version of the owner's skill of that name. Call under the owner's stripe lock.
  Result<SkillChange> PlanWrite(const std::string& workspace, SkillIndex& index,
                                SkillRecord incoming, int64_t now);
  // Sets the intent vectors of `records` (left empty when embedding fails).
  void Embed(std::vector<SkillRecord*> records) const;

  SkillStore* store_;
  const Analyzer* analyzer_;
  const Embedder* embedder_;
  const SkillExtractor* extractor_;
  SkillServiceOptions options_;
  const Clock* const clock_;  // options_.clock, or RealClock()

  ShardCache<SkillIndex> indexes_;  // by workspace, under options_.budget
  Mutex load_mu_;                   // one index load at a time

  static constexpr size_t kStripes = 64;
  std::array<Mutex, kStripes> owner_locks_;

  mutable Mutex running_mu_;
  bool started_ GUARDED_BY(running_mu_) = false;
  std::set<std::string> running_ids_ GUARDED_BY(running_mu_);  // tasks being run
  // Declared last: destroyed (workers joined) before the members the tasks use.
  JobQueue<SkillTaskRecord> jobs_;
};

// "1.0.0" -> "1.0.1", "3" -> "4", "beta" -> "beta.1": the last number goes up by one.
std::string NextSkillVersion(const std::string& version);

}  // namespace engram
