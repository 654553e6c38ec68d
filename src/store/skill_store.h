// SkillStore: skills (with their files and former versions) and the skill tasks that create or
// change them (asynchronous, resumed after a restart).
//
// Thread-safety: implementations are safe for concurrent use from any number of threads.
// Durability: a write call returns OK only after its data is durable on disk (fsync).
#pragma once

#include <string_view>
#include <vector>

#include "common/status.h"
#include "store/scope_sync.h"
#include "store/skill_types.h"

namespace engram {

class SkillStore : public virtual ScopeSync {
 public:
  // Every skill of a workspace, files included, in no particular order.
  virtual Result<std::vector<SkillRecord>> LoadSkills(std::string_view workspace) = 0;
  // kNotFound when the workspace has no such skill.
  virtual Result<SkillRecord> GetSkill(std::string_view workspace, std::string_view id) = 0;
  // Former versions of a skill, oldest first.
  virtual Result<std::vector<SkillVersionRecord>> GetSkillVersions(std::string_view workspace,
                                                                   std::string_view id) = 0;
  // Inserts, updates (recording the previous state as a version) and deletes skills atomically
  // and durably, with the end state of their task when asked. kConflict when an insert or update
  // would give an owner two skills of one name; kNotFound when an updated or deleted skill is gone.
  virtual Status ApplySkillChanges(SkillChangeBatch batch) = 0;
  virtual Status InsertSkillTask(const SkillTaskRecord& task) = 0;
  // kNotFound when the workspace has no such task.
  virtual Result<SkillTaskRecord> GetSkillTask(std::string_view workspace, std::string_view id) = 0;
  // Tasks still pending or running (a restart resumes them), oldest first.
  virtual Result<std::vector<SkillTaskRecord>> UnfinishedSkillTasks() = 0;
  // A workspace's tasks, newest first (created_at, then id descending): [offset, offset + limit)
  // of them; `total` gets their count.
  virtual Result<std::vector<SkillTaskRecord>> ListSkillTasks(std::string_view workspace,
                                                              size_t offset, size_t limit,
                                                              size_t* total) = 0;
};

}  // namespace engram
