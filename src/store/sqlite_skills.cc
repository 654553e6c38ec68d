// SqliteStore: skills (API V3), their former versions and their extraction tasks. The statements
// and rules are skill_sql.h's; writes run in the writer's group commit, reads on a read
// connection.
#include <fmt/format.h>

#include "store/job_rows.h"
#include "store/skill_sql.h"
#include "store/sqlite_sql_txn.h"
#include "store/sqlite_store.h"

namespace engram {

Result<std::vector<SkillRecord>> SqliteStore::LoadSkills(std::string_view workspace) {
  return Read([&](SqlTxn& txn) { return skill_sql::Load(txn, workspace); });
}

Result<SkillRecord> SqliteStore::GetSkill(std::string_view workspace, std::string_view id) {
  return Read([&](SqlTxn& txn) { return skill_sql::Get(txn, workspace, id); });
}

Result<std::vector<SkillVersionRecord>> SqliteStore::GetSkillVersions(std::string_view workspace,
                                                                      std::string_view id) {
  return Read([&](SqlTxn& txn) { return skill_sql::Versions(txn, workspace, id); });
}

Status SqliteStore::ApplySkillChanges(SkillChangeBatch batch) {
  return Write([this, &batch](SqlTxn& txn) -> Status {
    return skill_sql::Apply(txn, batch, clock_->WallMicros());
  });
}

Status SqliteStore::InsertSkillTask(const SkillTaskRecord& task) {
  return Write([&task](SqlTxn& txn) { return skill_sql::InsertTask(txn, task); });
}

Result<SkillTaskRecord> SqliteStore::GetSkillTask(std::string_view workspace, std::string_view id) {
  return Read([&](SqlTxn& txn) { return skill_sql::GetTask(txn, workspace, id); });
}

Result<std::vector<SkillTaskRecord>> SqliteStore::ListSkillTasks(std::string_view workspace,
                                                                 size_t offset, size_t limit,
                                                                 size_t* total) {
  return Read(
      [&](SqlTxn& txn) { return skill_sql::ListTasks(txn, workspace, offset, limit, total); });
}

Result<std::vector<SkillTaskRecord>> SqliteStore::UnfinishedSkillTasks() {
  // One node: every unfinished task is this process's to resume, oldest first.
  return Read([&](SqlTxn& txn) {
    return txn.QueryAll<SkillTaskRecord>(
        fmt::format("SELECT {} FROM skill_tasks WHERE {} ORDER BY created_at, id",
                    job_rows::kTaskColumns,
                    job_rows::UnfinishedCondition(JobVocabulary::kSkillTask)),
        {}, job_rows::ReadTaskRow);
  });
}

Result<bool> SqliteStore::ImportSkill(const SkillRecord& skill,
                                      const std::vector<SkillVersionRecord>& versions) {
  bool written = false;
  Status st = Write([&](SqlTxn& txn) -> Status {
    Result<bool> r = skill_sql::Import(txn, skill, versions);
    if (!r.ok()) return r.status();
    written = *r;
    return Status::Ok();
  });
  if (!st.ok()) return st;
  return written;
}

}  // namespace engram
