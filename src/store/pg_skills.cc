// PgStore: skills (API V3), their former versions and their extraction tasks. The statements and
// rules are skill_sql.h's, as SQLite runs them; in addition every write checks its text for NUL
// bytes and bumps the workspace's skills scope version first, which serialises the workspace's
// skill writers across nodes (so the name check cannot race), and tasks carry a lease (see
// pg_store.h).
#include <fmt/format.h>

#include <algorithm>
#include <initializer_list>
#include <optional>
#include <tuple>
#include <utility>

#include "common/time_util.h"
#include "store/job_rows.h"
#include "store/pg_rows.h"
#include "store/pg_sql_txn.h"
#include "store/pg_store.h"
#include "store/skill_sql.h"

namespace engram {

namespace {

using pg::CheckText;
using pg::HasNul;

constexpr JobVocabulary kTaskWords = JobVocabulary::kSkillTask;

// Tags, triggers, files and snapshots are JSON (NUL escaped); these are written as they are.
Status CheckSkillText(const std::string& workspace, const SkillRecord& r) {
  return CheckText({{workspace, "workspace"},
                    {r.id, "skill id"},
                    {r.owner, "skill owner"},
                    {r.agent_id, "skill agent_id"},
                    {r.name, "skill name"},
                    {r.description, "skill description"},
                    {r.version, "skill version"},
                    {r.license, "skill license"},
                    {r.metadata_json, "skill metadata"},
                    {r.vector_model, "skill vector_model"}});
}

Status CheckTaskText(const SkillTaskRecord& t) {
  return CheckText({{t.id, "task id"},
                    {t.workspace, "workspace"},
                    {t.request_json, "task request"},
                    {t.error_message, "task error_message"}});
}

}  // namespace

Result<std::vector<SkillRecord>> PgStore::LoadSkills(std::string_view workspace) {
  if (HasNul(workspace)) return std::vector<SkillRecord>{};  // never written
  return Read([&](SqlTxn& txn) { return skill_sql::Load(txn, workspace); });
}

Result<SkillRecord> PgStore::GetSkill(std::string_view workspace, std::string_view id) {
  if (HasNul(workspace) || HasNul(id)) return skill_sql::NotFound(id);
  return Read([&](SqlTxn& txn) { return skill_sql::Get(txn, workspace, id); });
}

Result<std::vector<SkillVersionRecord>> PgStore::GetSkillVersions(std::string_view workspace,
                                                                  std::string_view id) {
  if (HasNul(workspace) || HasNul(id)) return std::vector<SkillVersionRecord>{};
  return Read([&](SqlTxn& txn) { return skill_sql::Versions(txn, workspace, id); });
}

Status PgStore::ApplySkillChanges(SkillChangeBatch batch) {
  const std::string& ws = batch.workspace;
  for (const SkillChange& c : batch.changes) {
    if (c.op == SkillChange::Op::kDelete) {
      ENGRAM_RETURN_IF_ERROR(CheckText({{ws, "workspace"}, {c.record.id, "skill id"}}));
    } else {
      ENGRAM_RETURN_IF_ERROR(CheckSkillText(ws, c.record));
    }
    if (c.op == SkillChange::Op::kUpdate && c.previous) {
      ENGRAM_RETURN_IF_ERROR(CheckText({{c.previous->version, "previous skill version"}}));
    }
  }
  if (batch.finish_task) ENGRAM_RETURN_IF_ERROR(CheckTaskText(*batch.finish_task));
  const int64_t now = NowMicros();
  return pool_->Write([&](pqxx::work& t) -> Status {
    // Only skill changes move the version: a task's end alone changes no node's cached index.
    if (!batch.changes.empty()) pg::BumpScopeVersion(t, ScopeKeySkills(ws));
    // A node stalled past its lease may finish a task another node already finished: the first
    // end stands, and this batch writes nothing (no second set of skill versions).
    if (batch.finish_task) {
      ENGRAM_RETURN_IF_ERROR(
          pg::RefuseSecondEnd(t, "skill_tasks", kTaskWords, "task", batch.finish_task->id));
    }
    pg::PgTxn txn(t);
    return skill_sql::Apply(txn, batch, now);
  });
}

Status PgStore::InsertSkillTask(const SkillTaskRecord& task) {
  ENGRAM_RETURN_IF_ERROR(CheckTaskText(task));
  return pool_->Write([&](pqxx::work& t) -> Status {
    // No scope version bump: tasks are not part of any node's cached skill index.
    // The task is this node's while it renews the lease; another node takes it over after that.
    const int64_t lease_until = pg::DbNowMicros(t) + lease_us();
    pg::PgTxn txn(t);
    return skill_sql::InsertTask(txn, task,
                                 {{"lease_owner", "lease_until"}, {options_.node_id, lease_until}});
  });
}

Result<SkillTaskRecord> PgStore::GetSkillTask(std::string_view workspace, std::string_view id) {
  if (HasNul(workspace) || HasNul(id)) return skill_sql::TaskNotFound(id);
  return Read([&](SqlTxn& txn) { return skill_sql::GetTask(txn, workspace, id); });
}

Result<std::vector<SkillTaskRecord>> PgStore::ListSkillTasks(std::string_view workspace,
                                                             size_t offset, size_t limit,
                                                             size_t* total) {
  *total = 0;
  if (HasNul(workspace)) return std::vector<SkillTaskRecord>{};  // never written
  return Read(
      [&](SqlTxn& txn) { return skill_sql::ListTasks(txn, workspace, offset, limit, total); });
}

Result<std::vector<SkillTaskRecord>> PgStore::UnfinishedSkillTasks() {
  std::vector<SkillTaskRecord> out;
  Status st = pool_->Write([&](pqxx::work& txn) -> Status {
    out.clear();
    // Claims the unfinished tasks no live node holds: never claimed, or their node stopped renewing
    // the lease. SKIP LOCKED lets nodes claiming at the same time share them out instead of
    // waiting.
    const int64_t now = pg::DbNowMicros(txn);
    pqxx::result res = txn.exec_params(
        fmt::format("UPDATE skill_tasks SET lease_owner = $1, lease_until = $2 WHERE id IN ("
                    "SELECT id FROM skill_tasks WHERE {} "
                    "AND lease_until < $3 ORDER BY created_at LIMIT 1000 FOR UPDATE SKIP LOCKED) "
                    "RETURNING {}",
                    job_rows::UnfinishedCondition(kTaskWords), job_rows::kTaskColumns),
        options_.node_id, now + lease_us(), now);
    out.reserve(res.size());
    for (const auto& row : res) out.push_back(job_rows::ReadTaskRow(pg::ResultRow(row)));
    return Status::Ok();
  });
  if (!st.ok()) return st;
  // RETURNING follows no order; callers resume oldest first (ties by id, as SQLite orders them).
  std::sort(out.begin(), out.end(), [](const SkillTaskRecord& a, const SkillTaskRecord& b) {
    return std::tie(a.created_at_us, a.id) < std::tie(b.created_at_us, b.id);
  });
  return out;
}

Result<bool> PgStore::ImportSkill(const SkillRecord& skill,
                                  const std::vector<SkillVersionRecord>& versions) {
  const std::string& ws = skill.workspace;
  ENGRAM_RETURN_IF_ERROR(CheckSkillText(ws, skill));
  for (const SkillVersionRecord& v : versions) {
    ENGRAM_RETURN_IF_ERROR(CheckText({{v.skill_id, "skill version skill_id"},
                                      {v.version, "skill version"},
                                      {v.snapshot_json, "skill version snapshot"}}));
  }
  bool already = false;
  Status st = pool_->Write([&](pqxx::work& t) -> Status {
    already = false;
    // First, as every skill write: the version's row lock serialises the workspace's writers.
    pg::BumpScopeVersion(t, ScopeKeySkills(ws));
    pg::PgTxn txn(t);
    Result<bool> written = skill_sql::Import(txn, skill, versions);
    if (!written.ok()) return written.status();
    if (*written) return Status::Ok();
    already = true;  // an import run again: no node needs to reload the workspace's skills
    return pg::NothingChanged();
  });
  if (already) return false;
  if (!st.ok()) return st;
  return true;
}

}  // namespace engram
