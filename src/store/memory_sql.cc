#include "store/memory_sql.h"

#include <fmt/format.h>

#include <iterator>

#include "store/categories_json.h"
#include "store/history_rows.h"
#include "store/job_rows.h"
#include "store/memory_rows.h"

namespace engram::memory_sql {

namespace {

constexpr JobVocabulary kEventWords = JobVocabulary::kMemoryEvent;

}  // namespace

Result<std::vector<MemoryRecord>> LoadMemories(SqlTxn& txn, const MemorySource& source,
                                               std::string_view condition,
                                               const SqlParams& params) {
  return txn.QueryAll<MemoryRecord>(fmt::format("SELECT {} FROM {} WHERE {} ORDER BY m.seq",
                                                source.columns, source.from, condition),
                                    params, memory_rows::ReadMemoryRow);
}

Status InsertMemoryRow(SqlTxn& txn, std::string_view kind, MemoryRecord& m,
                       const ExtraColumns& extra) {
  SqlParams params = {m.id,
                      m.workspace,
                      m.user_id,
                      m.agent_id,
                      m.run_id,
                      m.session_id,
                      m.role,
                      m.text,
                      m.parts_json.empty() ? SqlValue::Null() : SqlValue(m.parts_json),
                      m.metadata_json,
                      SqlValue::OptionalInt(m.source_ts_us),
                      int64_t{m.position},
                      m.created_at_us,
                      m.updated_at_us,
                      kind,
                      SqlValue::OptionalInt(m.expires_at_us),
                      m.app_id,
                      CategoriesToJson(m.categories),
                      m.provenance_json};
  const std::string sql = InsertInto("memories",
                                     "id, workspace, user_id, agent_id, run_id, session_id, role, "
                                     "text, parts, metadata, source_ts, position, created_at, "
                                     "updated_at, kind, expires_at, app_id, categories, provenance",
                                     extra, params);
  Result<int64_t> seq = txn.QueryOne<int64_t>(
      sql + " RETURNING seq", params, [](const RowReader& r) { return r.Int(0); },
      Status::Internal("an insert returned no row"));
  if (!seq.ok()) return seq.status();
  m.seq = *seq;
  return Status::Ok();
}

Result<std::optional<int64_t>> UpdateMemoryRow(SqlTxn& txn, std::string_view workspace,
                                               const MemoryRecord& m, const ExtraColumns& extra) {
  SqlParams params = {m.text,
                      m.metadata_json,
                      m.updated_at_us,
                      m.created_at_us,
                      SqlValue::OptionalInt(m.expires_at_us),
                      CategoriesToJson(m.categories),
                      m.provenance_json,
                      m.id,
                      workspace,
                      SqlValue::OptionalInt(m.source_ts_us)};
  std::string set =
      "text = $1, metadata = $2, updated_at = $3, created_at = $4, expires_at = $5, "
      "categories = $6, provenance = $7, source_ts = $10";
  for (size_t i = 0; i < extra.names.size(); ++i) {
    fmt::format_to(std::back_inserter(set), ", {} = ${}", extra.names[i], params.size() + 1);
    params.push_back(extra.values.at(i));
  }
  return txn.QueryFirst<int64_t>(
      fmt::format("UPDATE memories SET {} WHERE id = $8 AND workspace = $9 AND kind = 'memory' "
                  "RETURNING seq",
                  set),
      params, [](const RowReader& r) { return r.Int(0); });
}

VectorUpdateKind VectorOnUpdate(const MemoryChange& c) {
  if (!c.record.vector.empty()) return VectorUpdateKind::kSet;
  return c.record.text == c.old_text ? VectorUpdateKind::kKeep : VectorUpdateKind::kDrop;
}

Status ApplyChanges(SqlTxn& txn, const MemoryChangeBatch& batch, int64_t now,
                    const ChangeHooks& hooks, MemoryChangeOutcome* outcome) {
  for (const MemoryChange& c : batch.changes) {
    bool applied = true;
    switch (c.op) {
      case MemoryChange::Op::kInsert: {
        MemoryRecord m = c.record;
        m.workspace = batch.workspace;
        ENGRAM_RETURN_IF_ERROR(hooks.insert_row(m));
        outcome->inserted.push_back(std::move(m));
        break;
      }
      case MemoryChange::Op::kUpdate: {
        Result<bool> updated = hooks.update_row(c);
        if (!updated.ok()) return updated.status();
        applied = *updated;
        break;
      }
      case MemoryChange::Op::kDelete: {
        Result<bool> deleted = DeleteMemory(txn, batch.workspace, c.record.id);
        if (!deleted.ok()) return deleted.status();
        applied = *deleted;
        if (applied && hooks.after_delete) ENGRAM_RETURN_IF_ERROR(hooks.after_delete(c.record.id));
        break;
      }
    }
    outcome->applied.push_back(applied);
    if (applied) {
      ENGRAM_RETURN_IF_ERROR(
          InsertHistory(txn, batch.workspace, history_rows::OfChange(c, batch.event_id, now)));
    }
  }
  return Status::Ok();
}

Status InsertEvent(SqlTxn& txn, const MemoryEventRecord& event, OnConflict on_conflict,
                   const ExtraColumns& extra) {
  SqlParams params = {event.id,
                      event.workspace,
                      job_rows::StoredWord(event.status, kEventWords),
                      event.request_json,
                      event.result_json,
                      event.error_message,
                      event.created_at_us,
                      event.updated_at_us};
  std::string sql = InsertInto("memory_events", job_rows::kEventColumns, extra, params);
  const char* conflict = "";
  if (on_conflict == OnConflict::kIgnore) conflict = " ON CONFLICT (id) DO NOTHING";
  if (on_conflict == OnConflict::kSetEnd) {
    conflict =
        " ON CONFLICT (id) DO UPDATE SET status = EXCLUDED.status, result = EXCLUDED.result, "
        "error_message = EXCLUDED.error_message, updated_at = EXCLUDED.updated_at";
  }
  return txn.Exec(sql + conflict, params).status();
}

Status SetEventStatus(SqlTxn& txn, std::string_view id, JobStatus status,
                      std::string_view error_message, int64_t now) {
  return txn
      .Exec(
          "UPDATE memory_events SET status = $1, error_message = $2, updated_at = $3 "
          "WHERE id = $4",
          {job_rows::StoredWord(status, kEventWords), error_message, now, id})
      .status();
}

Status EventNotFound(std::string_view id) {
  return Status::NotFound(fmt::format("event {} not found", id));
}

Result<MemoryEventRecord> GetEvent(SqlTxn& txn, std::string_view workspace, std::string_view id) {
  return txn.QueryOne<MemoryEventRecord>(
      fmt::format("SELECT {} FROM memory_events WHERE id = $1 AND workspace = $2",
                  job_rows::kEventColumns),
      {id, workspace}, job_rows::ReadEventRow, EventNotFound(id));
}

Status InsertHistory(SqlTxn& txn, std::string_view workspace, const HistoryRecord& h) {
  return txn
      .Exec(
          "INSERT INTO memory_history(memory_id, workspace, event, old_text, new_text, "
          "old_metadata, new_metadata, event_id, at, provenance) "
          "VALUES($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)",
          {h.memory_id, workspace, h.event, SqlValue::OptionalText(h.old_text),
           SqlValue::OptionalText(h.new_text), SqlValue::OptionalText(h.old_metadata_json),
           SqlValue::OptionalText(h.new_metadata_json), h.event_id, h.at_us, h.provenance_json})
      .status();
}

namespace {

constexpr std::string_view kHistoryColumns =
    "seq, memory_id, event, old_text, new_text, old_metadata, new_metadata, event_id, at, "
    "provenance";

HistoryRecord ReadHistoryRow(const RowReader& r) {
  auto optional_text = [&r](int i) -> std::optional<std::string> {
    if (r.IsNull(i)) return std::nullopt;
    return r.Text(i);
  };
  HistoryRecord h;
  h.seq = r.Int(0);
  h.memory_id = r.Text(1);
  h.event = r.Text(2);
  h.old_text = optional_text(3);
  h.new_text = optional_text(4);
  h.old_metadata_json = optional_text(5);
  h.new_metadata_json = optional_text(6);
  h.event_id = r.Text(7);
  h.at_us = r.Int(8);
  h.provenance_json = r.Text(9);
  return h;
}

}  // namespace

Result<std::vector<HistoryRecord>> History(SqlTxn& txn, std::string_view workspace,
                                           std::string_view memory_id) {
  return txn.QueryAll<HistoryRecord>(
      fmt::format("SELECT {} FROM memory_history WHERE workspace = $1 AND memory_id = $2 "
                  "ORDER BY seq",
                  kHistoryColumns),
      {workspace, memory_id}, ReadHistoryRow);
}

Result<std::vector<HistoryRecord>> ReplacedHistory(SqlTxn& txn, std::string_view workspace) {
  return txn.QueryAll<HistoryRecord>(
      fmt::format("SELECT {} FROM memory_history WHERE workspace = $1 AND event IN ('ADD', "
                  "'UPDATE') AND memory_id IN (SELECT memory_id FROM memory_history WHERE "
                  "workspace = $1 AND event = 'UPDATE') ORDER BY seq",
                  kHistoryColumns),
      {workspace}, ReadHistoryRow);
}

Status InsertFeedback(SqlTxn& txn, std::string_view workspace, const MemoryFeedbackRecord& f) {
  return txn
      .Exec(
          "INSERT INTO memory_feedback(id, workspace, memory_id, feedback, reason, created_at) "
          "VALUES($1, $2, $3, $4, $5, $6)",
          {f.id, workspace, f.memory_id, f.feedback, f.reason, f.created_at_us})
      .status();
}

Result<std::vector<MemoryFeedbackRecord>> Feedback(SqlTxn& txn, std::string_view workspace,
                                                   std::string_view memory_id) {
  return txn.QueryAll<MemoryFeedbackRecord>(
      "SELECT id, memory_id, feedback, reason, created_at FROM memory_feedback "
      "WHERE workspace = $1 AND memory_id = $2 ORDER BY created_at, id",
      {workspace, memory_id}, [](const RowReader& r) {
        return MemoryFeedbackRecord{.id = r.Text(0),
                                    .memory_id = r.Text(1),
                                    .feedback = r.Text(2),
                                    .reason = r.Text(3),
                                    .created_at_us = r.Int(4)};
      });
}

Result<bool> DeleteMemory(SqlTxn& txn, std::string_view workspace, std::string_view id) {
  Result<int64_t> deleted = txn.Exec(
      "DELETE FROM memories WHERE id = $1 AND workspace = $2 AND kind = 'memory'", {id, workspace});
  if (!deleted.ok()) return deleted.status();
  ENGRAM_RETURN_IF_ERROR(
      txn.Exec("DELETE FROM memory_feedback WHERE workspace = $1 AND memory_id = $2",
               {workspace, id})
          .status());
  return *deleted > 0;
}

namespace {

Result<bool> ImportIsNew(SqlTxn& txn, const MemoryRecord& m) {
  struct Holder {
    std::string workspace;
    std::string kind;
  };
  Result<std::optional<Holder>> holder = txn.QueryFirst<Holder>(
      "SELECT workspace, kind FROM memories WHERE id = $1", {m.id}, [](const RowReader& r) {
        return Holder{r.Text(0), r.Text(1)};
      });
  if (!holder.ok()) return holder.status();
  if (!holder->has_value()) return true;
  if ((*holder)->workspace == m.workspace && (*holder)->kind == "memory") return false;
  return Status::Conflict(
      fmt::format("memory id {} is taken by another workspace or a message", m.id));
}

Status InsertImportedRecords(SqlTxn& txn, const AgentMemoryImport& item) {
  const std::string& ws = item.memory.workspace;
  for (const HistoryRecord& h : item.history) ENGRAM_RETURN_IF_ERROR(InsertHistory(txn, ws, h));
  for (const MemoryFeedbackRecord& f : item.feedback) {
    ENGRAM_RETURN_IF_ERROR(InsertFeedback(txn, ws, f));
  }
  return Status::Ok();
}

}  // namespace

Result<bool> Import(SqlTxn& txn, const AgentMemoryImport& item,
                    const std::function<Status(MemoryRecord&)>& insert_row) {
  Result<bool> is_new = ImportIsNew(txn, item.memory);
  if (!is_new.ok() || !*is_new) return is_new;
  MemoryRecord row = item.memory;
  ENGRAM_RETURN_IF_ERROR(insert_row(row));
  ENGRAM_RETURN_IF_ERROR(InsertImportedRecords(txn, item));
  return true;
}

}  // namespace engram::memory_sql
