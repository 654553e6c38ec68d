// Skills (API V3), their former versions and their extraction tasks: every statement and rule of
// the skill tables, written once over SqlTxn (sql_txn.h) for both stores. A store runs these in
// its own transaction and adds only what is its own: PostgreSQL checks text for NUL bytes first,
// serialises a workspace's skill writers on its scope version and leases tasks to nodes.
// Internal to store/.
//
// Thread-safety: functions use only the transaction they are given.
#pragma once

#include <cstddef>
#include <string_view>
#include <vector>

#include "store/skill_types.h"
#include "store/sql_txn.h"

namespace engram::skill_sql {

// The answers for a skill or a task that is not there.
Status NotFound(std::string_view id);
Status TaskNotFound(std::string_view id);

Result<std::vector<SkillRecord>> Load(SqlTxn& txn, std::string_view workspace);
// kNotFound when the workspace has no skill `id`.
Result<SkillRecord> Get(SqlTxn& txn, std::string_view workspace, std::string_view id);
// The skill's former versions, oldest first.
Result<std::vector<SkillVersionRecord>> Versions(SqlTxn& txn, std::string_view workspace,
                                                 std::string_view id);

// Applies the batch's changes in order and then ends its task; `now` stamps the version rows and
// the task. kConflict when a name is taken by another of the owner's skills, kNotFound when an
// updated or deleted skill is missing: the caller rolls the transaction back.
Status Apply(SqlTxn& txn, const SkillChangeBatch& batch, int64_t now);

// `extra`: PostgreSQL's lease columns.
Status InsertTask(SqlTxn& txn, const SkillTaskRecord& task, const ExtraColumns& extra = {});
// kNotFound when the workspace has no task `id`.
Result<SkillTaskRecord> GetTask(SqlTxn& txn, std::string_view workspace, std::string_view id);
// Newest first: [offset, offset + limit) of the workspace's tasks; `total` gets their count.
Result<std::vector<SkillTaskRecord>> ListTasks(SqlTxn& txn, std::string_view workspace,
                                               size_t offset, size_t limit, size_t* total);

// Writes an exported skill and its versions: false when the skill is there already (an import
// run again); kConflict when its id belongs to another workspace or its name to another skill.
Result<bool> Import(SqlTxn& txn, const SkillRecord& skill,
                    const std::vector<SkillVersionRecord>& versions);

}  // namespace engram::skill_sql
