// PgStore: skills (API V3), their former versions and their extraction tasks. Behaves as
// sqlite_skills.cc (same columns, same JSON encodings via skill_rows.h); in addition every write
// bumps the workspace's skills scope version first, which serialises the workspace's skill writers
// across nodes (so the name check below cannot race), and tasks carry a lease (see pg_store.h).
#include <fmt/format.h>

#include <algorithm>
#include <initializer_list>
#include <optional>
#include <tuple>
#include <utility>

#include "common/time_util.h"
#include "store/job_rows.h"
#include "store/pg_rows.h"
#include "store/pg_store.h"
#include "store/skill_rows.h"

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

// Runs `sql` with every column of skill_rows::kSkillColumns as $1..$16, in order. An empty vector
// is passed as empty bytes, which the statements turn into NULL (NULLIF($15, ''::bytea)), as SQLite
// stores it.
pqxx::result ExecSkill(pqxx::work& txn, const std::string& sql, const std::string& workspace,
                       const SkillRecord& r) {
  return txn.exec_params(
      sql, r.id, workspace, r.owner, r.agent_id, r.name, r.description, r.version,
      skill_rows::EncodeList(r.tags), skill_rows::EncodeList(r.triggers), r.license,
      r.metadata_json.empty() ? std::string("{}") : r.metadata_json,
      skill_rows::EncodeFiles(r.files), r.created_at_us, r.updated_at_us, pg::VectorBytes(r.vector),
      r.vector.empty() ? std::string() : r.vector_model);
}

// kConflict when another skill of the owner already has the name. The scope version's row lock,
// taken first, keeps another node from inserting the name meanwhile; the unique index backs it.
Status CheckNameFree(pqxx::work& txn, const std::string& workspace, const SkillRecord& r) {
  pqxx::result res = txn.exec_params(
      "SELECT id FROM skills WHERE workspace = $1 AND owner = $2 AND name = $3 AND id <> $4",
      workspace, r.owner, r.name, r.id);
  if (!res.empty()) {
    return Status::Conflict(fmt::format("user {} already has a skill named '{}' ({})", r.owner,
                                        r.name, res[0][0].as<std::string>()));
  }
  return Status::Ok();
}

void InsertSkillRow(pqxx::work& txn, const std::string& workspace, const SkillRecord& r) {
  ExecSkill(txn,
            fmt::format("INSERT INTO skills({}) VALUES($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, "
                        "$11, $12, $13, $14, NULLIF($15, ''::bytea), $16)",
                        skill_rows::kSkillColumns),
            workspace, r);
}

void InsertVersionRow(pqxx::work& txn, const std::string& workspace, const SkillVersionRecord& v) {
  txn.exec_params(
      "INSERT INTO skill_versions(skill_id, workspace, version, snapshot, replaced_at) "
      "VALUES($1, $2, $3, $4, $5)",
      v.skill_id, workspace, v.version, v.snapshot_json, v.replaced_at_us);
}

Status CheckTaskText(const SkillTaskRecord& t) {
  return CheckText({{t.id, "task id"},
                    {t.workspace, "workspace"},
                    {t.request_json, "task request"},
                    {t.error_message, "task error_message"}});
}

}  // namespace

Result<std::vector<SkillRecord>> PgStore::LoadSkills(std::string_view workspace) {
  std::vector<SkillRecord> out;
  if (HasNul(workspace)) return out;
  Status st = pool_->Read([&](pqxx::transaction_base& txn) -> Status {
    out.clear();
    pqxx::result res = txn.exec_params(
        fmt::format("SELECT {} FROM skills WHERE workspace = $1", skill_rows::kSkillColumns),
        std::string(workspace));
    out.reserve(res.size());
    for (const auto& row : res) out.push_back(skill_rows::ReadSkillRow(pg::ResultRow(row)));
    return Status::Ok();
  });
  if (!st.ok()) return st;
  return out;
}

Result<SkillRecord> PgStore::GetSkill(std::string_view workspace, std::string_view id) {
  std::optional<SkillRecord> found;
  if (!HasNul(workspace) && !HasNul(id)) {
    Status st = pool_->Read([&](pqxx::transaction_base& txn) -> Status {
      found.reset();
      pqxx::result res =
          txn.exec_params(fmt::format("SELECT {} FROM skills WHERE workspace = $1 AND id = $2",
                                      skill_rows::kSkillColumns),
                          std::string(workspace), std::string(id));
      if (!res.empty()) found = skill_rows::ReadSkillRow(pg::ResultRow(res[0]));
      return Status::Ok();
    });
    if (!st.ok()) return st;
  }
  if (!found) return Status::NotFound(fmt::format("skill {} not found", id));
  return std::move(*found);
}

Result<std::vector<SkillVersionRecord>> PgStore::GetSkillVersions(std::string_view workspace,
                                                                  std::string_view id) {
  std::vector<SkillVersionRecord> out;
  if (HasNul(workspace) || HasNul(id)) return out;
  Status st = pool_->Read([&](pqxx::transaction_base& txn) -> Status {
    out.clear();
    pqxx::result res = txn.exec_params(
        "SELECT skill_id, version, snapshot, replaced_at FROM skill_versions "
        "WHERE workspace = $1 AND skill_id = $2 ORDER BY seq",
        std::string(workspace), std::string(id));
    for (const auto& row : res) {
      out.push_back({row[0].as<std::string>(), row[1].as<std::string>(), row[2].as<std::string>(),
                     row[3].as<int64_t>()});
    }
    return Status::Ok();
  });
  if (!st.ok()) return st;
  return out;
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
  return pool_->Write([&](pqxx::work& txn) -> Status {
    // Only skill changes move the version: a task's end alone changes no node's cached index.
    if (!batch.changes.empty()) pg::BumpScopeVersion(txn, ScopeKeySkills(ws));
    // A node stalled past its lease may finish a task another node already finished: the first
    // end stands, and this batch writes nothing (no second set of skill versions).
    if (batch.finish_task) {
      pqxx::result cur = txn.exec_params("SELECT status FROM skill_tasks WHERE id = $1 FOR UPDATE",
                                         batch.finish_task->id);
      if (!cur.empty()) {
        const std::string word = cur[0][0].as<std::string>();
        if (IsFinished(job_rows::ReadStatus(word, kTaskWords, batch.finish_task->id))) {
          return Status::Conflict(
              fmt::format("task {} was already finished ({})", batch.finish_task->id, word));
        }
      }
    }
    for (const SkillChange& c : batch.changes) {
      const SkillRecord& r = c.record;
      switch (c.op) {
        case SkillChange::Op::kInsert: {
          ENGRAM_RETURN_IF_ERROR(CheckNameFree(txn, ws, r));
          InsertSkillRow(txn, ws, r);
          break;
        }
        case SkillChange::Op::kUpdate: {
          ENGRAM_RETURN_IF_ERROR(CheckNameFree(txn, ws, r));
          pqxx::result up = ExecSkill(
              txn,
              "UPDATE skills SET owner = $3, agent_id = $4, name = $5, description = $6, "
              "version = $7, tags = $8, triggers = $9, license = $10, metadata = $11, "
              "files = $12, created_at = $13, updated_at = $14, vector = NULLIF($15, ''::bytea), "
              "vector_model = $16 WHERE id = $1 AND workspace = $2",
              ws, r);
          if (up.affected_rows() == 0) {
            return Status::NotFound(fmt::format("skill {} not found", r.id));
          }
          if (c.previous) {
            InsertVersionRow(txn, ws,
                             {r.id, c.previous->version, skill_rows::Snapshot(*c.previous), now});
          }
          break;
        }
        case SkillChange::Op::kDelete: {
          pqxx::result del =
              txn.exec_params("DELETE FROM skills WHERE id = $1 AND workspace = $2", r.id, ws);
          if (del.affected_rows() == 0) {
            return Status::NotFound(fmt::format("skill {} not found", r.id));
          }
          txn.exec_params("DELETE FROM skill_versions WHERE skill_id = $1 AND workspace = $2", r.id,
                          ws);
          break;
        }
      }
    }
    if (batch.finish_task) {
      const SkillTaskRecord& t = *batch.finish_task;
      txn.exec_params(
          "UPDATE skill_tasks SET status = $1, skill_ids = $2, error_message = $3, "
          "updated_at = $4 WHERE id = $5",
          job_rows::StoredWord(t.status, kTaskWords), skill_rows::EncodeList(t.skill_ids),
          t.error_message, now, t.id);
    }
    return Status::Ok();
  });
}

Status PgStore::InsertSkillTask(const SkillTaskRecord& task) {
  ENGRAM_RETURN_IF_ERROR(CheckTaskText(task));
  return pool_->Write([&](pqxx::work& txn) -> Status {
    // No scope version bump: tasks are not part of any node's cached skill index.
    // The task is this node's while it renews the lease; another node takes it over after that.
    const int64_t lease_until = pg::DbNowMicros(txn) + lease_us();
    txn.exec_params(fmt::format("INSERT INTO skill_tasks({}, lease_owner, lease_until) "
                                "VALUES($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)",
                                job_rows::kTaskColumns),
                    task.id, task.workspace, job_rows::StoredWord(task.status, kTaskWords),
                    task.request_json, skill_rows::EncodeList(task.skill_ids), task.error_message,
                    task.created_at_us, task.updated_at_us, options_.node_id, lease_until);
    return Status::Ok();
  });
}

Result<SkillTaskRecord> PgStore::GetSkillTask(std::string_view workspace, std::string_view id) {
  std::optional<SkillTaskRecord> found;
  if (!HasNul(workspace) && !HasNul(id)) {
    Status st = pool_->Read([&](pqxx::transaction_base& txn) -> Status {
      found.reset();
      pqxx::result res =
          txn.exec_params(fmt::format("SELECT {} FROM skill_tasks WHERE id = $1 AND workspace = $2",
                                      job_rows::kTaskColumns),
                          std::string(id), std::string(workspace));
      if (!res.empty()) found = job_rows::ReadTaskRow(pg::ResultRow(res[0]));
      return Status::Ok();
    });
    if (!st.ok()) return st;
  }
  if (!found) return Status::NotFound(fmt::format("skill task {} not found", id));
  return std::move(*found);
}

Result<std::vector<SkillTaskRecord>> PgStore::ListSkillTasks(std::string_view workspace,
                                                             size_t offset, size_t limit,
                                                             size_t* total) {
  std::vector<SkillTaskRecord> out;
  *total = 0;
  if (HasNul(workspace)) return out;  // never written
  Status st = pool_->Read([&](pqxx::transaction_base& txn) -> Status {
    out.clear();
    const std::string ws(workspace);
    for (const auto& r : pg::JobsNewestFirst(txn, "skill_tasks", job_rows::kTaskColumns, ws, offset,
                                             limit, total)) {
      out.push_back(job_rows::ReadTaskRow(pg::ResultRow(r)));
    }
    return Status::Ok();
  });
  if (!st.ok()) return st;
  return out;
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
  Status st = pool_->Write([&](pqxx::work& txn) -> Status {
    already = false;
    // First, as every skill write: the version's row lock serialises the workspace's writers.
    pg::BumpScopeVersion(txn, ScopeKeySkills(ws));
    pqxx::result found = txn.exec_params("SELECT workspace FROM skills WHERE id = $1", skill.id);
    if (!found.empty()) {
      if (found[0][0].as<std::string>() != ws) {
        return Status::Conflict(fmt::format("skill id {} is taken by another workspace", skill.id));
      }
      already = true;  // an import run again: no node needs to reload the workspace's skills
      return pg::NothingChanged();
    }
    ENGRAM_RETURN_IF_ERROR(CheckNameFree(txn, ws, skill));
    InsertSkillRow(txn, ws, skill);
    for (const SkillVersionRecord& v : versions) InsertVersionRow(txn, ws, v);
    return Status::Ok();
  });
  if (already) return false;
  if (!st.ok()) return st;
  return true;
}

}  // namespace engram
