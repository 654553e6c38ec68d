#include "store/skill_sql.h"

#include <fmt/format.h>

#include "store/job_rows.h"
#include "store/job_sql.h"
#include "store/skill_rows.h"

namespace engram::skill_sql {

namespace {

constexpr JobVocabulary kTaskWords = JobVocabulary::kSkillTask;

// Every column of skill_rows::kSkillColumns, in order ($1..$16). An empty vector is NULL, and so
// is its model name's absence ("").
SqlParams SkillParams(const std::string& workspace, const SkillRecord& r) {
  return {r.id,
          workspace,
          r.owner,
          r.agent_id,
          r.name,
          r.description,
          r.version,
          skill_rows::EncodeList(r.tags),
          skill_rows::EncodeList(r.triggers),
          r.license,
          r.metadata_json.empty() ? std::string("{}") : r.metadata_json,
          skill_rows::EncodeFiles(r.files),
          r.created_at_us,
          r.updated_at_us,
          SqlValue::Vector(r.vector),
          r.vector.empty() ? std::string() : r.vector_model};
}

SkillVersionRecord ReadVersionRow(const RowReader& row) {
  return {row.Text(0), row.Text(1), row.Text(2), row.Int(3)};
}

// kConflict when another skill of the owner already has the name. PostgreSQL's scope version row
// lock, taken before, keeps another node from inserting the name meanwhile; SQLite has one
// writer. The unique index backs both.
Status CheckNameFree(SqlTxn& txn, const std::string& workspace, const SkillRecord& r) {
  Result<std::optional<std::string>> other = txn.QueryFirst<std::string>(
      "SELECT id FROM skills WHERE workspace = $1 AND owner = $2 AND name = $3 AND id <> $4",
      {workspace, r.owner, r.name, r.id}, [](const RowReader& row) { return row.Text(0); });
  if (!other.ok()) return other.status();
  if (other->has_value()) {
    return Status::Conflict(
        fmt::format("user {} already has a skill named '{}' ({})", r.owner, r.name, **other));
  }
  return Status::Ok();
}

Status InsertSkillRow(SqlTxn& txn, const std::string& workspace, const SkillRecord& r) {
  SqlParams params = SkillParams(workspace, r);
  const std::string sql = InsertInto("skills", skill_rows::kSkillColumns, {}, params);
  return txn.Exec(sql, params).status();
}

Status InsertVersionRow(SqlTxn& txn, const std::string& workspace, const SkillVersionRecord& v) {
  return txn
      .Exec(
          "INSERT INTO skill_versions(skill_id, workspace, version, snapshot, replaced_at) "
          "VALUES($1, $2, $3, $4, $5)",
          {v.skill_id, workspace, v.version, v.snapshot_json, v.replaced_at_us})
      .status();
}

Status ApplyChange(SqlTxn& txn, const std::string& ws, const SkillChange& c, int64_t now) {
  const SkillRecord& r = c.record;
  switch (c.op) {
    case SkillChange::Op::kInsert:
      ENGRAM_RETURN_IF_ERROR(CheckNameFree(txn, ws, r));
      return InsertSkillRow(txn, ws, r);
    case SkillChange::Op::kUpdate: {
      ENGRAM_RETURN_IF_ERROR(CheckNameFree(txn, ws, r));
      Result<int64_t> changed = txn.Exec(
          "UPDATE skills SET owner = $3, agent_id = $4, name = $5, description = $6, "
          "version = $7, tags = $8, triggers = $9, license = $10, metadata = $11, "
          "files = $12, created_at = $13, updated_at = $14, vector = $15, "
          "vector_model = $16 WHERE id = $1 AND workspace = $2",
          SkillParams(ws, r));
      if (!changed.ok()) return changed.status();
      if (*changed == 0) return NotFound(r.id);
      if (!c.previous) return Status::Ok();
      return InsertVersionRow(txn, ws,
                              {r.id, c.previous->version, skill_rows::Snapshot(*c.previous), now});
    }
    case SkillChange::Op::kDelete: {
      Result<int64_t> changed =
          txn.Exec("DELETE FROM skills WHERE id = $1 AND workspace = $2", {r.id, ws});
      if (!changed.ok()) return changed.status();
      if (*changed == 0) return NotFound(r.id);
      return txn
          .Exec("DELETE FROM skill_versions WHERE skill_id = $1 AND workspace = $2", {r.id, ws})
          .status();
    }
  }
  return Status::Internal("unknown skill change");
}

}  // namespace

Status NotFound(std::string_view id) {
  return Status::NotFound(fmt::format("skill {} not found", id));
}

Status TaskNotFound(std::string_view id) {
  return Status::NotFound(fmt::format("skill task {} not found", id));
}

Result<std::vector<SkillRecord>> Load(SqlTxn& txn, std::string_view workspace) {
  return txn.QueryAll<SkillRecord>(
      fmt::format("SELECT {} FROM skills WHERE workspace = $1", skill_rows::kSkillColumns),
      {workspace}, skill_rows::ReadSkillRow);
}

Result<SkillRecord> Get(SqlTxn& txn, std::string_view workspace, std::string_view id) {
  return txn.QueryOne<SkillRecord>(
      fmt::format("SELECT {} FROM skills WHERE workspace = $1 AND id = $2",
                  skill_rows::kSkillColumns),
      {workspace, id}, skill_rows::ReadSkillRow, NotFound(id));
}

Result<std::vector<SkillVersionRecord>> Versions(SqlTxn& txn, std::string_view workspace,
                                                 std::string_view id) {
  return txn.QueryAll<SkillVersionRecord>(
      "SELECT skill_id, version, snapshot, replaced_at FROM skill_versions "
      "WHERE workspace = $1 AND skill_id = $2 ORDER BY seq",
      {workspace, id}, ReadVersionRow);
}

Status Apply(SqlTxn& txn, const SkillChangeBatch& batch, int64_t now) {
  for (const SkillChange& c : batch.changes) {
    ENGRAM_RETURN_IF_ERROR(ApplyChange(txn, batch.workspace, c, now));
  }
  if (!batch.finish_task) return Status::Ok();
  const SkillTaskRecord& t = *batch.finish_task;
  return txn
      .Exec(
          "UPDATE skill_tasks SET status = $1, skill_ids = $2, error_message = $3, "
          "updated_at = $4 WHERE id = $5",
          {job_rows::StoredWord(t.status, kTaskWords), skill_rows::EncodeList(t.skill_ids),
           t.error_message, now, t.id})
      .status();
}

Status InsertTask(SqlTxn& txn, const SkillTaskRecord& task, const ExtraColumns& extra) {
  SqlParams params = {task.id,
                      task.workspace,
                      job_rows::StoredWord(task.status, kTaskWords),
                      task.request_json,
                      skill_rows::EncodeList(task.skill_ids),
                      task.error_message,
                      task.created_at_us,
                      task.updated_at_us};
  const std::string sql = InsertInto("skill_tasks", job_rows::kTaskColumns, extra, params);
  return txn.Exec(sql, params).status();
}

Result<SkillTaskRecord> GetTask(SqlTxn& txn, std::string_view workspace, std::string_view id) {
  return txn.QueryOne<SkillTaskRecord>(
      fmt::format("SELECT {} FROM skill_tasks WHERE id = $1 AND workspace = $2",
                  job_rows::kTaskColumns),
      {id, workspace}, job_rows::ReadTaskRow, TaskNotFound(id));
}

Result<std::vector<SkillTaskRecord>> ListTasks(SqlTxn& txn, std::string_view workspace,
                                               size_t offset, size_t limit, size_t* total) {
  std::vector<SkillTaskRecord> out;
  ENGRAM_RETURN_IF_ERROR(job_sql::NewestFirst(
      txn, "skill_tasks", job_rows::kTaskColumns, workspace, offset, limit, total,
      [&](const RowReader& row) { out.push_back(job_rows::ReadTaskRow(row)); }));
  return out;
}

Result<bool> Import(SqlTxn& txn, const SkillRecord& skill,
                    const std::vector<SkillVersionRecord>& versions) {
  Result<std::optional<std::string>> holder =
      txn.QueryFirst<std::string>("SELECT workspace FROM skills WHERE id = $1", {skill.id},
                                  [](const RowReader& row) { return row.Text(0); });
  if (!holder.ok()) return holder.status();
  if (holder->has_value()) {
    if (**holder == skill.workspace) return false;
    return Status::Conflict(fmt::format("skill id {} is taken by another workspace", skill.id));
  }
  ENGRAM_RETURN_IF_ERROR(CheckNameFree(txn, skill.workspace, skill));
  ENGRAM_RETURN_IF_ERROR(InsertSkillRow(txn, skill.workspace, skill));
  for (const SkillVersionRecord& v : versions) {
    ENGRAM_RETURN_IF_ERROR(InsertVersionRow(txn, skill.workspace, v));
  }
  return true;
}

}  // namespace engram::skill_sql
