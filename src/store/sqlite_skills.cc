// SqliteStore: skills (API V3), their former versions and their extraction tasks.
#include <fmt/format.h>

#include "common/codec.h"
#include "common/time_util.h"
#include "store/job_rows.h"
#include "store/row_bounds.h"
#include "store/skill_rows.h"
#include "store/sqlite_store.h"
#include "store/sqlite_util.h"

namespace engram {

namespace {

// Binds every column of skill_rows::kSkillColumns, in order, from 1.
void BindSkill(sqlite::Stmt& s, const std::string& workspace, const SkillRecord& r) {
  s.Bind(1, r.id);
  s.Bind(2, workspace);
  s.Bind(3, r.owner);
  s.Bind(4, r.agent_id);
  s.Bind(5, r.name);
  s.Bind(6, r.description);
  s.Bind(7, r.version);
  s.Bind(8, skill_rows::EncodeList(r.tags));
  s.Bind(9, skill_rows::EncodeList(r.triggers));
  s.Bind(10, r.license);
  s.Bind(11, r.metadata_json.empty() ? std::string("{}") : r.metadata_json);
  s.Bind(12, skill_rows::EncodeFiles(r.files));
  s.Bind(13, r.created_at_us);
  s.Bind(14, r.updated_at_us);
  if (r.vector.empty()) {
    s.BindNull(15);
  } else {
    s.BindBlob(15, FloatVectorBytes(r.vector));
  }
  s.Bind(16, r.vector.empty() ? std::string() : r.vector_model);
}

// kConflict when another skill of the owner already has the name.
Status CheckNameFree(sqlite3* db, const std::string& workspace, const SkillRecord& r) {
  sqlite::Stmt q(
      db, "SELECT id FROM skills WHERE workspace = ? AND owner = ? AND name = ? AND id <> ?");
  ENGRAM_RETURN_IF_ERROR(q.prepare_status());
  q.Bind(1, workspace);
  q.Bind(2, r.owner);
  q.Bind(3, r.name);
  q.Bind(4, r.id);
  Status st;
  if (q.Step(&st)) {
    return Status::Conflict(fmt::format("user {} already has a skill named '{}' ({})", r.owner,
                                        r.name, q.ColumnText(0)));
  }
  return st;
}

Status InsertSkillRow(sqlite3* db, const std::string& workspace, const SkillRecord& r) {
  sqlite::Stmt ins(db, fmt::format("INSERT INTO skills({}) VALUES(?, ?, ?, ?, ?, ?, ?, ?, ?, ?, "
                                   "?, ?, ?, ?, ?, ?)",
                                   skill_rows::kSkillColumns));
  ENGRAM_RETURN_IF_ERROR(ins.prepare_status());
  BindSkill(ins, workspace, r);
  return ins.Exec();
}

Status InsertVersionRow(sqlite3* db, const std::string& workspace, const SkillVersionRecord& v) {
  sqlite::Stmt ins(db,
                   "INSERT INTO skill_versions(skill_id, workspace, version, snapshot, "
                   "replaced_at) VALUES(?, ?, ?, ?, ?)");
  ENGRAM_RETURN_IF_ERROR(ins.prepare_status());
  ins.Bind(1, v.skill_id);
  ins.Bind(2, workspace);
  ins.Bind(3, v.version);
  ins.Bind(4, v.snapshot_json);
  ins.Bind(5, v.replaced_at_us);
  return ins.Exec();
}

constexpr JobVocabulary kTaskWords = JobVocabulary::kSkillTask;

}  // namespace

Result<std::vector<SkillRecord>> SqliteStore::LoadSkills(std::string_view workspace) {
  return WithReader([&](sqlite3* db) -> Result<std::vector<SkillRecord>> {
    std::vector<SkillRecord> out;
    sqlite::Stmt q(
        db, fmt::format("SELECT {} FROM skills WHERE workspace = ?", skill_rows::kSkillColumns));
    ENGRAM_RETURN_IF_ERROR(q.prepare_status());
    q.Bind(1, workspace);
    Status st;
    while (q.Step(&st)) out.push_back(skill_rows::ReadSkillRow(sqlite::StmtRow(q)));
    if (!st.ok()) return st;
    return out;
  });
}

Result<SkillRecord> SqliteStore::GetSkill(std::string_view workspace, std::string_view id) {
  return WithReader([&](sqlite3* db) -> Result<SkillRecord> {
    sqlite::Stmt q(db, fmt::format("SELECT {} FROM skills WHERE workspace = ? AND id = ?",
                                   skill_rows::kSkillColumns));
    ENGRAM_RETURN_IF_ERROR(q.prepare_status());
    q.Bind(1, workspace);
    q.Bind(2, id);
    Status st;
    if (q.Step(&st)) return skill_rows::ReadSkillRow(sqlite::StmtRow(q));
    if (!st.ok()) return st;
    return Status::NotFound(fmt::format("skill {} not found", id));
  });
}

Result<std::vector<SkillVersionRecord>> SqliteStore::GetSkillVersions(std::string_view workspace,
                                                                      std::string_view id) {
  return WithReader([&](sqlite3* db) -> Result<std::vector<SkillVersionRecord>> {
    std::vector<SkillVersionRecord> out;
    sqlite::Stmt q(db,
                   "SELECT skill_id, version, snapshot, replaced_at FROM skill_versions "
                   "WHERE workspace = ? AND skill_id = ? ORDER BY seq");
    ENGRAM_RETURN_IF_ERROR(q.prepare_status());
    q.Bind(1, workspace);
    q.Bind(2, id);
    Status st;
    while (q.Step(&st)) {
      out.push_back({q.ColumnText(0), q.ColumnText(1), q.ColumnText(2), q.ColumnInt(3)});
    }
    if (!st.ok()) return st;
    return out;
  });
}

Status SqliteStore::ApplySkillChanges(SkillChangeBatch batch) {
  return Submit([this, &batch](sqlite3* db) -> Status {
    const int64_t now = clock_->WallMicros();
    const std::string& ws = batch.workspace;
    for (const SkillChange& c : batch.changes) {
      const SkillRecord& r = c.record;
      switch (c.op) {
        case SkillChange::Op::kInsert: {
          ENGRAM_RETURN_IF_ERROR(CheckNameFree(db, ws, r));
          ENGRAM_RETURN_IF_ERROR(InsertSkillRow(db, ws, r));
          break;
        }
        case SkillChange::Op::kUpdate: {
          ENGRAM_RETURN_IF_ERROR(CheckNameFree(db, ws, r));
          sqlite::Stmt up(db,
                          "UPDATE skills SET id = ?1, workspace = ?2, owner = ?3, agent_id = ?4, "
                          "name = ?5, description = ?6, version = ?7, tags = ?8, triggers = ?9, "
                          "license = ?10, metadata = ?11, files = ?12, created_at = ?13, "
                          "updated_at = ?14, vector = ?15, vector_model = ?16 "
                          "WHERE id = ?1 AND workspace = ?2");
          ENGRAM_RETURN_IF_ERROR(up.prepare_status());
          BindSkill(up, ws, r);
          ENGRAM_RETURN_IF_ERROR(up.Exec());
          if (sqlite3_changes(db) == 0) {
            return Status::NotFound(fmt::format("skill {} not found", r.id));
          }
          if (c.previous) {
            ENGRAM_RETURN_IF_ERROR(InsertVersionRow(
                db, ws, {r.id, c.previous->version, skill_rows::Snapshot(*c.previous), now}));
          }
          break;
        }
        case SkillChange::Op::kDelete: {
          sqlite::Stmt del(db, "DELETE FROM skills WHERE id = ? AND workspace = ?");
          ENGRAM_RETURN_IF_ERROR(del.prepare_status());
          del.Bind(1, r.id);
          del.Bind(2, ws);
          ENGRAM_RETURN_IF_ERROR(del.Exec());
          if (sqlite3_changes(db) == 0) {
            return Status::NotFound(fmt::format("skill {} not found", r.id));
          }
          sqlite::Stmt dv(db, "DELETE FROM skill_versions WHERE skill_id = ? AND workspace = ?");
          ENGRAM_RETURN_IF_ERROR(dv.prepare_status());
          dv.Bind(1, r.id);
          dv.Bind(2, ws);
          ENGRAM_RETURN_IF_ERROR(dv.Exec());
          break;
        }
      }
    }
    if (batch.finish_task) {
      const SkillTaskRecord& t = *batch.finish_task;
      sqlite::Stmt up(db,
                      "UPDATE skill_tasks SET status = ?, skill_ids = ?, error_message = ?, "
                      "updated_at = ? WHERE id = ?");
      ENGRAM_RETURN_IF_ERROR(up.prepare_status());
      up.Bind(1, JobStatusName(t.status, kTaskWords));
      up.Bind(2, skill_rows::EncodeList(t.skill_ids));
      up.Bind(3, t.error_message);
      up.Bind(4, now);
      up.Bind(5, t.id);
      ENGRAM_RETURN_IF_ERROR(up.Exec());
    }
    return Status::Ok();
  });
}

Status SqliteStore::InsertSkillTask(const SkillTaskRecord& task) {
  return Submit([&task](sqlite3* db) -> Status {
    sqlite::Stmt ins(db, fmt::format("INSERT INTO skill_tasks({}) VALUES(?, ?, ?, ?, ?, ?, ?, ?)",
                                     job_rows::kTaskColumns));
    ENGRAM_RETURN_IF_ERROR(ins.prepare_status());
    ins.Bind(1, task.id);
    ins.Bind(2, task.workspace);
    ins.Bind(3, JobStatusName(task.status, kTaskWords));
    ins.Bind(4, task.request_json);
    ins.Bind(5, skill_rows::EncodeList(task.skill_ids));
    ins.Bind(6, task.error_message);
    ins.Bind(7, task.created_at_us);
    ins.Bind(8, task.updated_at_us);
    return ins.Exec();
  });
}

Result<SkillTaskRecord> SqliteStore::GetSkillTask(std::string_view workspace, std::string_view id) {
  return WithReader([&](sqlite3* db) -> Result<SkillTaskRecord> {
    sqlite::Stmt q(db, fmt::format("SELECT {} FROM skill_tasks WHERE id = ? AND workspace = ?",
                                   job_rows::kTaskColumns));
    ENGRAM_RETURN_IF_ERROR(q.prepare_status());
    q.Bind(1, id);
    q.Bind(2, workspace);
    Status st;
    if (q.Step(&st)) return job_rows::ReadTaskRow(sqlite::StmtRow(q));
    if (!st.ok()) return st;
    return Status::NotFound(fmt::format("skill task {} not found", id));
  });
}

Result<std::vector<SkillTaskRecord>> SqliteStore::ListSkillTasks(std::string_view workspace,
                                                                 size_t offset, size_t limit,
                                                                 size_t* total) {
  *total = 0;
  return WithReader([&](sqlite3* db) -> Result<std::vector<SkillTaskRecord>> {
    Status st;
    sqlite::Stmt count(db, "SELECT count(*) FROM skill_tasks WHERE workspace = ?");
    ENGRAM_RETURN_IF_ERROR(count.prepare_status());
    count.Bind(1, workspace);
    if (!count.Step(&st)) return st.ok() ? Status::Internal("count returned no row") : st;
    *total = static_cast<size_t>(count.ColumnInt(0));
    std::vector<SkillTaskRecord> out;
    sqlite::Stmt q(db, fmt::format("SELECT {} FROM skill_tasks WHERE workspace = ? "
                                   "ORDER BY created_at DESC, id DESC LIMIT ? OFFSET ?",
                                   job_rows::kTaskColumns));
    ENGRAM_RETURN_IF_ERROR(q.prepare_status());
    q.Bind(1, workspace);
    q.Bind(2, SqlRowBound(limit));
    q.Bind(3, SqlRowBound(offset));
    while (q.Step(&st)) out.push_back(job_rows::ReadTaskRow(sqlite::StmtRow(q)));
    if (!st.ok()) return st;
    return out;
  });
}

Result<std::vector<SkillTaskRecord>> SqliteStore::UnfinishedSkillTasks() {
  return WithReader([&](sqlite3* db) -> Result<std::vector<SkillTaskRecord>> {
    std::vector<SkillTaskRecord> out;
    sqlite::Stmt q(db,
                   fmt::format("SELECT {} FROM skill_tasks WHERE {} ORDER BY created_at, id",
                               job_rows::kTaskColumns, job_rows::UnfinishedCondition(kTaskWords)));
    ENGRAM_RETURN_IF_ERROR(q.prepare_status());
    Status st;
    while (q.Step(&st)) out.push_back(job_rows::ReadTaskRow(sqlite::StmtRow(q)));
    if (!st.ok()) return st;
    return out;
  });
}

Result<bool> SqliteStore::ImportSkill(const SkillRecord& skill,
                                      const std::vector<SkillVersionRecord>& versions) {
  bool written = false;
  Status st = Submit([&](sqlite3* db) -> Status {
    written = false;
    sqlite::Stmt q(db, "SELECT workspace FROM skills WHERE id = ?");
    ENGRAM_RETURN_IF_ERROR(q.prepare_status());
    q.Bind(1, skill.id);
    Status step;
    if (q.Step(&step)) {
      if (q.ColumnText(0) == skill.workspace) return Status::Ok();
      return Status::Conflict(fmt::format("skill id {} is taken by another workspace", skill.id));
    }
    ENGRAM_RETURN_IF_ERROR(step);
    ENGRAM_RETURN_IF_ERROR(CheckNameFree(db, skill.workspace, skill));
    ENGRAM_RETURN_IF_ERROR(InsertSkillRow(db, skill.workspace, skill));
    for (const SkillVersionRecord& v : versions) {
      ENGRAM_RETURN_IF_ERROR(InsertVersionRow(db, skill.workspace, v));
    }
    written = true;
    return Status::Ok();
  });
  if (!st.ok()) return st;
  return written;
}

}  // namespace engram
