// PgStore: agent memories (memory API V4), their history and their events (with job leases).
#include <fmt/format.h>

#include <algorithm>
#include <limits>
#include <tuple>

#include "common/time_util.h"
#include "store/categories_json.h"
#include "store/job_rows.h"
#include "store/job_sql.h"
#include "store/memory_sql.h"
#include "store/pg_rows.h"
#include "store/pg_store.h"

namespace engram {

namespace {

using pg::HasNul;

constexpr JobVocabulary kEventWords = JobVocabulary::kMemoryEvent;

Status CheckEventText(const MemoryEventRecord& e) {
  ENGRAM_RETURN_IF_ERROR(pg::CheckText("event id", e.id));
  ENGRAM_RETURN_IF_ERROR(pg::CheckText("event workspace", e.workspace));
  ENGRAM_RETURN_IF_ERROR(pg::CheckText("event request", e.request_json));
  ENGRAM_RETURN_IF_ERROR(pg::CheckText("event result", e.result_json));
  return pg::CheckText("event error message", e.error_message);
}

// Every text a change writes (its row and its history row).
Status CheckChangeText(const MemoryChange& c) {
  const MemoryRecord& m = c.record;
  switch (c.op) {
    case MemoryChange::Op::kInsert:
      return pg::CheckMemoryText(m);
    case MemoryChange::Op::kUpdate:
      ENGRAM_RETURN_IF_ERROR(pg::CheckText("memory id", m.id));
      ENGRAM_RETURN_IF_ERROR(pg::CheckText("memory text", m.text));
      ENGRAM_RETURN_IF_ERROR(pg::CheckText("memory metadata", m.metadata_json));
      ENGRAM_RETURN_IF_ERROR(pg::CheckText("memory provenance", m.provenance_json));
      ENGRAM_RETURN_IF_ERROR(pg::CheckText("vector model", m.vector_model));
      for (const std::string& cat : m.categories) {
        ENGRAM_RETURN_IF_ERROR(pg::CheckText("category", cat));
      }
      break;
    case MemoryChange::Op::kDelete:
      ENGRAM_RETURN_IF_ERROR(pg::CheckText("memory id", m.id));
      break;
  }
  ENGRAM_RETURN_IF_ERROR(pg::CheckText("old memory text", c.old_text));
  return pg::CheckText("old memory metadata", c.old_metadata_json);
}

Status CheckFeedbackText(std::string_view workspace, const MemoryFeedbackRecord& feedback) {
  return pg::CheckText({{workspace, "workspace"},
                        {feedback.id, "feedback id"},
                        {feedback.memory_id, "memory_id"},
                        {feedback.feedback, "feedback"},
                        {feedback.reason, "feedback_reason"}});
}

// Applies one update stamped with `version`; false when the memory no longer exists.
Result<bool> UpdateMemory(SqlTxn& sql, const std::string& workspace, const MemoryChange& c,
                          int64_t version) {
  const MemoryRecord& m = c.record;
  ExtraColumns extra{{"version"}, {version}};
  switch (memory_sql::VectorOnUpdate(c)) {
    case memory_sql::VectorUpdateKind::kSet:
      extra.names.insert(extra.names.end(), {"vector", "vector_model"});
      extra.values.insert(extra.values.end(), {SqlValue::Vector(m.vector), m.vector_model});
      break;
    case memory_sql::VectorUpdateKind::kKeep:
      break;
    case memory_sql::VectorUpdateKind::kDrop:
      extra.names.insert(extra.names.end(), {"vector", "vector_model"});
      extra.values.insert(extra.values.end(), {SqlValue::Null(), ""});
      break;
  }
  Result<std::optional<int64_t>> seq = memory_sql::UpdateMemoryRow(sql, workspace, m, extra);
  if (!seq.ok()) return seq.status();
  return seq->has_value();
}

}  // namespace

Result<std::vector<MemoryRecord>> PgStore::LoadAgentMemories(std::string_view workspace) {
  if (HasNul(workspace)) return std::vector<MemoryRecord>{};  // never written
  return Read([&](SqlTxn& txn) {
    return memory_sql::LoadMemories(txn, pg::kMemories, memory_sql::kAgentMemoriesOf, {workspace});
  });
}

Result<MemoryChangeOutcome> PgStore::ApplyMemoryChanges(MemoryChangeBatch batch) {
  ENGRAM_RETURN_IF_ERROR(pg::CheckText("workspace", batch.workspace));
  ENGRAM_RETURN_IF_ERROR(pg::CheckText("event id", batch.event_id));
  for (const auto& c : batch.changes) ENGRAM_RETURN_IF_ERROR(CheckChangeText(c));
  if (batch.finish_event) ENGRAM_RETURN_IF_ERROR(CheckEventText(*batch.finish_event));
  const std::string scope = ScopeKeyAgentMemories(batch.workspace);

  MemoryChangeOutcome outcome;
  Status st = pool_->Write([&](pqxx::work& txn) -> Status {
    outcome = {};
    // First: the scope's row lock serialises this workspace's writers, and the version tells
    // whether another node wrote since the caller planned these changes.
    const int64_t version = pg::BumpScopeVersion(txn, scope);
    if (batch.expected_version && version != *batch.expected_version + 1) {
      return Status::Conflict(
          fmt::format("agent memories of workspace {} changed meanwhile (version {}, expected {})",
                      batch.workspace, version - 1, *batch.expected_version));
    }
    // A node stalled past its lease may finish an event another node already finished: the
    // first end stands, and this batch writes nothing.
    if (batch.finish_event) {
      ENGRAM_RETURN_IF_ERROR(
          pg::RefuseSecondEnd(txn, "memory_events", kEventWords, "event", batch.finish_event->id));
    }
    const int64_t now = NowMicros();
    pg::PgTxn sql(txn);
    memory_sql::ChangeHooks hooks;
    hooks.insert_row = [&](MemoryRecord& m) {
      return pg::InsertMemoryRow(txn, "memory", version, m);
    };
    hooks.update_row = [&](const MemoryChange& c) {
      return UpdateMemory(sql, batch.workspace, c, version);
    };
    // Nodes that cached a deleted memory learn of the deletion from its tombstone.
    hooks.after_delete = [&](const std::string& id) -> Status {
      Result<int64_t> n = sql.Exec(
          "INSERT INTO memory_tombstones(workspace, id, version) VALUES($1, $2, $3) "
          "ON CONFLICT DO NOTHING",
          {batch.workspace, id, version});
      return n.ok() ? Status::Ok() : n.status();
    };
    ENGRAM_RETURN_IF_ERROR(memory_sql::ApplyChanges(sql, batch, now, hooks, &outcome));
    if (batch.finish_event) {
      const MemoryEventRecord& e = *batch.finish_event;
      txn.exec_params(
          "UPDATE memory_events SET status = $1, result = $2, error_message = $3, updated_at = $4 "
          "WHERE id = $5",
          job_rows::StoredWord(e.status, kEventWords), e.result_json, e.error_message, now, e.id);
    }
    return Status::Ok();
  });
  if (!st.ok()) return st;
  return outcome;
}

Result<std::vector<HistoryRecord>> PgStore::GetHistory(std::string_view workspace,
                                                       std::string_view memory_id) {
  if (HasNul(workspace) || HasNul(memory_id)) return std::vector<HistoryRecord>{};
  return Read([&](SqlTxn& txn) { return memory_sql::History(txn, workspace, memory_id); });
}

Result<std::vector<HistoryRecord>> PgStore::LoadReplacedHistory(std::string_view workspace) {
  if (HasNul(workspace)) return std::vector<HistoryRecord>{};
  return Read([&](SqlTxn& txn) { return memory_sql::ReplacedHistory(txn, workspace); });
}

Status PgStore::InsertEvent(const MemoryEventRecord& event) {
  ENGRAM_RETURN_IF_ERROR(CheckEventText(event));
  return pool_->Write([&](pqxx::work& txn) -> Status {
    // This node runs the event: the lease keeps other nodes off it while the renewer extends it.
    const int64_t lease_until = pg::DbNowMicros(txn) + lease_us();
    pg::PgTxn sql(txn);
    return memory_sql::InsertEvent(
        sql, event, memory_sql::OnConflict::kFail,
        {{"lease_owner", "lease_until"}, {options_.node_id, lease_until}});
  });
}

Status PgStore::UpdateEventStatus(std::string_view id, JobStatus status,
                                  std::string_view error_message) {
  ENGRAM_RETURN_IF_ERROR(pg::CheckText("event id", id));
  ENGRAM_RETURN_IF_ERROR(pg::CheckText("event error message", error_message));
  return Write([&](SqlTxn& txn) {
    return memory_sql::SetEventStatus(txn, id, status, error_message, NowMicros());
  });
}

Result<MemoryEventRecord> PgStore::GetEvent(std::string_view workspace, std::string_view id) {
  if (HasNul(workspace) || HasNul(id)) return memory_sql::EventNotFound(id);
  return Read([&](SqlTxn& txn) { return memory_sql::GetEvent(txn, workspace, id); });
}

Result<std::vector<MemoryEventRecord>> PgStore::UnfinishedEvents() {
  std::vector<MemoryEventRecord> out;
  Status st = pool_->Write([&](pqxx::work& txn) -> Status {
    out.clear();
    // Claims the unfinished events whose lease ran out (their node died, or never renewed):
    // SKIP LOCKED lets nodes polling together split them instead of queueing on each other.
    const int64_t now = pg::DbNowMicros(txn);
    auto rows = txn.exec_params(
        fmt::format("UPDATE memory_events SET lease_owner = $1, lease_until = $2 WHERE id IN ("
                    "SELECT id FROM memory_events WHERE {} AND "
                    "lease_until < $3 ORDER BY created_at LIMIT 1000 FOR UPDATE SKIP LOCKED) "
                    "RETURNING {}",
                    job_rows::UnfinishedCondition(kEventWords), job_rows::kEventColumns),
        options_.node_id, now + lease_us(), now);
    for (const auto& r : rows) out.push_back(job_rows::ReadEventRow(pg::ResultRow(r)));
    return Status::Ok();
  });
  if (!st.ok()) return st;
  std::sort(out.begin(), out.end(), [](const MemoryEventRecord& a, const MemoryEventRecord& b) {
    return std::tie(a.created_at_us, a.id) < std::tie(b.created_at_us, b.id);
  });
  return out;
}

Result<std::vector<MemoryEventRecord>> PgStore::ListEvents(std::string_view workspace,
                                                           size_t offset, size_t limit,
                                                           size_t* total) {
  *total = 0;
  if (HasNul(workspace)) return std::vector<MemoryEventRecord>{};  // never written
  return Read([&](SqlTxn& txn) -> Result<std::vector<MemoryEventRecord>> {
    std::vector<MemoryEventRecord> out;
    ENGRAM_RETURN_IF_ERROR(job_sql::NewestFirst(
        txn, "memory_events", job_rows::kEventColumns, workspace, offset, limit, total,
        [&](const RowReader& row) { out.push_back(job_rows::ReadEventRow(row)); }));
    return out;
  });
}

Status PgStore::InsertFeedback(std::string_view workspace, const MemoryFeedbackRecord& feedback) {
  ENGRAM_RETURN_IF_ERROR(CheckFeedbackText(workspace, feedback));
  return pool_->Write([&](pqxx::work& txn) -> Status {
    pg::PgTxn sql(txn);
    return memory_sql::InsertFeedback(sql, workspace, feedback);
  });
}

Result<std::vector<MemoryFeedbackRecord>> PgStore::GetFeedback(std::string_view workspace,
                                                               std::string_view memory_id) {
  if (HasNul(workspace) || HasNul(memory_id)) return std::vector<MemoryFeedbackRecord>{};
  return Read([&](SqlTxn& txn) { return memory_sql::Feedback(txn, workspace, memory_id); });
}

Result<ScopeDelta> PgStore::LoadAgentMemoriesSince(std::string_view workspace, int64_t since) {
  ScopeDelta delta;
  if (HasNul(workspace)) return delta;  // never written: nothing changed
  const std::string key = ScopeKeyAgentMemories(workspace);
  // One snapshot: a writer bumps the version and writes its rows and tombstones in one
  // transaction, so what is read here is exactly the changes up to the version read.
  Status st = pool_->Read([&](pqxx::transaction_base& txn) -> Status {
    delta = {};
    delta.version = pg::ReadScopeVersion(txn, key);
    pg::PgTxn sql(txn);
    Result<std::vector<MemoryRecord>> rows = memory_sql::LoadMemories(
        sql, pg::kMemories, fmt::format("{} AND version > $2", memory_sql::kAgentMemoriesOf),
        {workspace, since});
    if (!rows.ok()) return rows.status();
    delta.upserts = std::move(*rows);
    auto removed = txn.exec_params(
        "SELECT id FROM memory_tombstones WHERE workspace = $1 AND version > $2 ORDER BY version",
        std::string(workspace), since);
    for (const auto& r : removed) delta.removed_ids.push_back(r[0].as<std::string>());
    return Status::Ok();
  });
  if (!st.ok()) return st;
  return delta;
}

Result<bool> PgStore::ImportAgentMemory(const AgentMemoryImport& item) {
  const MemoryRecord& m = item.memory;
  ENGRAM_RETURN_IF_ERROR(pg::CheckMemoryText(m));
  for (const HistoryRecord& h : item.history) {
    for (const auto* text :
         {&h.old_text, &h.new_text, &h.old_metadata_json, &h.new_metadata_json}) {
      if (*text) ENGRAM_RETURN_IF_ERROR(pg::CheckText("history", **text));
    }
    ENGRAM_RETURN_IF_ERROR(pg::CheckText({{h.memory_id, "history memory_id"},
                                          {h.event, "history event"},
                                          {h.event_id, "history event_id"},
                                          {h.provenance_json, "history provenance"}}));
  }
  for (const MemoryFeedbackRecord& f : item.feedback) {
    ENGRAM_RETURN_IF_ERROR(CheckFeedbackText(m.workspace, f));
  }
  bool written = false;
  Status st = pool_->Write([&](pqxx::work& txn) -> Status {
    written = false;
    pg::PgTxn sql(txn);
    Result<bool> imported = memory_sql::Import(sql, item, [&](MemoryRecord& row) {
      // The workspace's version moves, so every node's cached shard loads the memory.
      const int64_t version = pg::BumpScopeVersion(txn, ScopeKeyAgentMemories(m.workspace));
      return pg::InsertMemoryRow(txn, "memory", version, row);
    });
    if (!imported.ok()) return imported.status();
    written = *imported;
    return Status::Ok();
  });
  if (!st.ok()) return st;
  return written;
}

}  // namespace engram
