// SqliteStore: agent memories (memory API V4), their history and their events.
#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <set>
#include <tuple>

#include "common/json_reader.h"
#include "common/time_util.h"
#include "store/categories_json.h"
#include "store/job_rows.h"
#include "store/memory_sql.h"
#include "store/sqlite_rows.h"
#include "store/sqlite_sql_txn.h"
#include "store/sqlite_store.h"

namespace engram {

namespace {

constexpr JobVocabulary kEventWords = JobVocabulary::kMemoryEvent;

// Applies one update; false when the memory no longer exists.
Result<bool> UpdateMemory(sqlite3* db, const std::string& workspace, const MemoryChange& c) {
  const MemoryRecord& m = c.record;
  sqlite::SqliteTxn txn(db);
  Result<std::optional<int64_t>> updated = memory_sql::UpdateMemoryRow(txn, workspace, m);
  if (!updated.ok()) return updated.status();
  if (!updated->has_value()) return false;
  const int64_t seq = **updated;
  switch (memory_sql::VectorOnUpdate(c)) {
    case memory_sql::VectorUpdateKind::kSet:
      ENGRAM_RETURN_IF_ERROR(sqlite::InsertVector(db, seq, m.vector_model, m.vector));
      break;
    case memory_sql::VectorUpdateKind::kKeep:
      break;
    case memory_sql::VectorUpdateKind::kDrop: {
      Result<int64_t> n = txn.Exec("DELETE FROM memory_vectors WHERE memory_seq = $1", {seq});
      if (!n.ok()) return n.status();
      break;
    }
  }
  return true;
}

}  // namespace

Result<std::vector<MemoryRecord>> SqliteStore::LoadAgentMemories(std::string_view workspace) {
  return Read([&](SqlTxn& txn) {
    return memory_sql::LoadMemories(txn, sqlite::kMemories, memory_sql::kAgentMemoriesOf,
                                    {workspace});
  });
}

Result<MemoryChangeOutcome> SqliteStore::ApplyMemoryChanges(MemoryChangeBatch batch) {
  MemoryChangeOutcome outcome;
  Status st = Submit([this, &batch, &outcome](sqlite3* db) -> Status {
    outcome = {};
    sqlite::SqliteTxn txn(db);
    const int64_t now = clock_->WallMicros();
    memory_sql::ChangeHooks hooks;
    hooks.insert_row = [db](MemoryRecord& m) { return sqlite::InsertMemoryRow(db, "memory", m); };
    hooks.update_row = [&](const MemoryChange& c) { return UpdateMemory(db, batch.workspace, c); };
    // A deleted memory's vector goes with its row (ON DELETE CASCADE).
    ENGRAM_RETURN_IF_ERROR(memory_sql::ApplyChanges(txn, batch, now, hooks, &outcome));
    if (batch.finish_event) {
      // An event accepted through the intake journal has no row yet: its row is written once,
      // here, with its end (one random b-tree leaf and one transaction less per add).
      MemoryEventRecord end = *batch.finish_event;
      end.updated_at_us = now;
      ENGRAM_RETURN_IF_ERROR(memory_sql::InsertEvent(txn, end, memory_sql::OnConflict::kSetEnd));
    }
    return Status::Ok();
  });
  if (!st.ok()) return st;
  if (batch.finish_event) ForgetAcceptedEvent(batch.finish_event->id);
  return outcome;
}

void SqliteStore::ForgetAcceptedEvent(const std::string& id) {
  if (!journal_) return;
  uint64_t number = IntakeJournal::kNoRecord;
  {
    MutexLock lock(&accepted_mu_);
    auto it = accepted_.find(id);
    if (it == accepted_.end()) return;
    number = it->second.number;
    accepted_.erase(it);
  }
  if (number != IntakeJournal::kNoRecord) journal_->Release(number);
}

Result<std::vector<HistoryRecord>> SqliteStore::GetHistory(std::string_view workspace,
                                                           std::string_view memory_id) {
  return Read([&](SqlTxn& txn) { return memory_sql::History(txn, workspace, memory_id); });
}

Result<std::vector<HistoryRecord>> SqliteStore::LoadReplacedHistory(std::string_view workspace) {
  return Read([&](SqlTxn& txn) { return memory_sql::ReplacedHistory(txn, workspace); });
}

namespace {

// An accepted event as an intake journal record.
std::string EncodeJournalEvent(const MemoryEventRecord& e) {
  nlohmann::json j = {{"id", e.id},
                      {"workspace", e.workspace},
                      {"status", JobStatusName(e.status, kEventWords)},
                      {"request", e.request_json},
                      {"created_at", e.created_at_us},
                      {"updated_at", e.updated_at_us}};
  return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

Result<MemoryEventRecord> DecodeJournalEvent(const std::string& record) {
  auto j = ReadJsonOrDiscarded(record, kStoredJsonLimits);
  if (!j.is_object()) return Status::Internal("intake journal record is not a JSON object");
  MemoryEventRecord e;
  try {
    e.id = j.at("id").get<std::string>();
    e.workspace = j.at("workspace").get<std::string>();
    e.status = job_rows::ReadStatus(j.at("status").get<std::string>(), kEventWords, e.id);
    e.request_json = j.at("request").get<std::string>();
    e.created_at_us = j.at("created_at").get<int64_t>();
    e.updated_at_us = j.at("updated_at").get<int64_t>();
  } catch (const nlohmann::json::exception& ex) {
    return Status::Internal(std::string("intake journal record: ") + ex.what());
  }
  return e;
}

}  // namespace

Status SqliteStore::InsertEvent(const MemoryEventRecord& event) {
  return Write([&event](SqlTxn& txn) {
    return memory_sql::InsertEvent(txn, event, memory_sql::OnConflict::kFail);
  });
}

namespace {

// The events an earlier run left in the journal, decoded.
Result<std::vector<MemoryEventRecord>> JournalLeftovers(const IntakeJournal& journal) {
  auto records = journal.ReadLeftovers();
  if (!records.ok()) return records.status();
  std::vector<MemoryEventRecord> events;
  for (const auto& record : *records) {
    auto event = DecodeJournalEvent(record);
    // Only a record that passed its checksum gets here: one that does not decode is a bug.
    if (!event.ok()) return event.status();
    events.push_back(std::move(*event));
  }
  return events;
}

}  // namespace

Status SqliteStore::OpenIntakeJournal() {
  std::error_code ec;
  std::filesystem::create_directories(options_.intake_journal_dir, ec);
  if (ec) {
    return Status::Internal(fmt::format("cannot create intake journal directory {}: {}",
                                        options_.intake_journal_dir, ec.message()));
  }
  auto journal = IntakeJournal::Open(
      {.dir = options_.intake_journal_dir, .sync = options_.synchronous_full, .clock = clock_});
  if (!journal.ok()) return journal.status();
  auto events = JournalLeftovers(**journal);
  if (!events.ok()) return events.status();
  if (!events->empty()) {
    // Events acknowledged and not ended before the last stop (an ended one whose record was not
    // released yet is already stored: kIgnore leaves its row as it is).
    ENGRAM_RETURN_IF_ERROR(Write([&events](SqlTxn& txn) -> Status {
      for (const auto& e : *events) {
        ENGRAM_RETURN_IF_ERROR(memory_sql::InsertEvent(txn, e, memory_sql::OnConflict::kIgnore));
      }
      return Status::Ok();
    }));
    spdlog::info("intake journal: {} event(s) read back", events->size());
  }
  ENGRAM_RETURN_IF_ERROR((*journal)->DropLeftovers());
  journal_ = std::move(*journal);
  return Status::Ok();
}

void SqliteStore::ShowIntakeJournal() {
  // Reads go on whatever the journal holds: a journal that cannot be read is reported, not fatal.
  std::error_code ec;
  if (!std::filesystem::is_directory(options_.intake_journal_dir, ec)) return;
  auto journal = IntakeJournal::Open({.dir = options_.intake_journal_dir, .sync = false});
  auto events = journal.ok() ? JournalLeftovers(**journal)
                             : Result<std::vector<MemoryEventRecord>>(journal.status());
  if (!events.ok()) {
    spdlog::warn(
        "intake journal: cannot read it on a read-only start ({}); its events show up "
        "at the next writable start",
        events.status().ToString());
    return;
  }
  MutexLock lock(&accepted_mu_);
  for (auto& event : *events) {
    const std::string id = event.id;
    accepted_.try_emplace(id, Accepted{std::move(event), IntakeJournal::kNoRecord});
  }
  if (!events->empty()) {
    spdlog::info("intake journal: {} acknowledged event(s) wait for a writable start",
                 events->size());
  }
  // The journal is closed without appending: its files stay for the next writable start.
}

void SqliteStore::AcceptEvent(MemoryEventRecord event, std::function<void(Status)> done) {
  if (!journal_) return done(InsertEvent(event));
  // The journal record is the event's durable copy until the event ends: its row is written
  // once, with its end (ApplyMemoryChanges), and the record released then. Meanwhile GetEvent
  // finds it here, and a restart stores it from the journal as PENDING.
  std::string record = EncodeJournalEvent(event);
  const std::string id = event.id;
  {
    MutexLock lock(&accepted_mu_);
    accepted_[id] = Accepted{std::move(event), IntakeJournal::kNoRecord};
  }
  // Answered once synced (on this thread, or the one that wrote the record's group); the caller
  // starts the event only then, so its end (which releases the record) comes after the number is
  // known.
  journal_->Append(std::move(record),
                   [this, id, done = std::move(done)](Status st, uint64_t number) {
                     {
                       MutexLock lock(&accepted_mu_);
                       auto it = accepted_.find(id);
                       if (it != accepted_.end() && st.ok()) it->second.number = number;
                       if (it != accepted_.end() && !st.ok()) accepted_.erase(it);
                     }
                     done(st);
                   });
}

Status SqliteStore::UpdateEventStatus(std::string_view id, JobStatus status,
                                      std::string_view error_message) {
  return Write([&](SqlTxn& txn) {
    return memory_sql::SetEventStatus(txn, id, status, error_message, clock_->WallMicros());
  });
}

Result<MemoryEventRecord> SqliteStore::GetEvent(std::string_view workspace, std::string_view id) {
  auto stored = ReadEvent(workspace, id);
  if (stored.ok() || stored.status().code() != StatusCode::kNotFound) return stored;
  {
    MutexLock lock(&accepted_mu_);
    auto it = accepted_.find(std::string(id));
    if (it != accepted_.end()) {
      if (it->second.event.workspace != workspace) return stored;
      return it->second.event;
    }
  }
  // It may have ended (its row committed, the entry dropped) since the first read.
  return ReadEvent(workspace, id);
}

Result<MemoryEventRecord> SqliteStore::ReadEvent(std::string_view workspace, std::string_view id) {
  return Read([&](SqlTxn& txn) { return memory_sql::GetEvent(txn, workspace, id); });
}

Result<std::vector<MemoryEventRecord>> SqliteStore::UnfinishedEvents() {
  return WithReader([&](sqlite3* db) -> Result<std::vector<MemoryEventRecord>> {
    std::vector<MemoryEventRecord> out;
    sqlite::Stmt q(
        db, fmt::format("SELECT {} FROM memory_events WHERE {} ORDER BY created_at, id",
                        job_rows::kEventColumns, job_rows::UnfinishedCondition(kEventWords)));
    ENGRAM_RETURN_IF_ERROR(q.prepare_status());
    Status st;
    while (q.Step(&st)) out.push_back(job_rows::ReadEventRow(sqlite::StmtRow(q)));
    if (!st.ok()) return st;
    return out;
  });
}

}  // namespace engram

namespace engram {

namespace {

bool NewerEventFirst(const MemoryEventRecord& a, const MemoryEventRecord& b) {
  return std::tie(a.created_at_us, a.id) > std::tie(b.created_at_us, b.id);
}

}  // namespace

Result<std::vector<MemoryEventRecord>> SqliteStore::AcceptedWithoutRow(
    sqlite3* db, std::optional<std::string_view> workspace) {
  std::vector<MemoryEventRecord> accepted;
  {
    MutexLock lock(&accepted_mu_);
    for (const auto& [id, a] : accepted_) {
      if (!workspace || a.event.workspace == *workspace) accepted.push_back(a.event);
    }
  }
  if (accepted.empty()) return accepted;
  nlohmann::json ids = nlohmann::json::array();
  for (const auto& e : accepted) ids.push_back(e.id);
  sqlite::Stmt stored(db,
                      "SELECT id FROM memory_events WHERE id IN (SELECT value FROM json_each(?))");
  ENGRAM_RETURN_IF_ERROR(stored.prepare_status());
  stored.Bind(1, ids.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
  std::set<std::string> with_row;
  Status st;
  while (stored.Step(&st)) with_row.insert(stored.ColumnText(0));
  ENGRAM_RETURN_IF_ERROR(st);
  std::erase_if(accepted, [&](const MemoryEventRecord& e) { return with_row.count(e.id) > 0; });
  return accepted;
}

Result<std::vector<MemoryEventRecord>> SqliteStore::ListEvents(std::string_view workspace,
                                                               size_t offset, size_t limit,
                                                               size_t* total) {
  return WithReader([&](sqlite3* db) -> Result<std::vector<MemoryEventRecord>> {
    // Events accepted through the intake journal have no row until they end: they are listed
    // from memory, once.
    auto accepted = AcceptedWithoutRow(db, workspace);
    if (!accepted.ok()) return accepted.status();
    Status st;
    sqlite::Stmt count(db, "SELECT count(*) FROM memory_events WHERE workspace = ?");
    ENGRAM_RETURN_IF_ERROR(count.prepare_status());
    count.Bind(1, workspace);
    if (!count.Step(&st)) return st.ok() ? Status::Internal("count returned no row") : st;
    *total = static_cast<size_t>(count.ColumnInt(0)) + accepted->size();
    count.Reset();
    std::vector<MemoryEventRecord> out = std::move(*accepted);
    if (offset >= *total || limit == 0) return std::vector<MemoryEventRecord>{};
    // The rows that can fall in the page whatever the accepted events' times.
    const size_t wanted = std::min(*total, offset + std::min(limit, *total));
    sqlite::Stmt q(db, fmt::format("SELECT {} FROM memory_events WHERE workspace = ? "
                                   "ORDER BY created_at DESC, id DESC LIMIT ?",
                                   job_rows::kEventColumns));
    ENGRAM_RETURN_IF_ERROR(q.prepare_status());
    q.Bind(1, workspace);
    q.Bind(2, static_cast<int64_t>(wanted));
    while (q.Step(&st)) out.push_back(job_rows::ReadEventRow(sqlite::StmtRow(q)));
    ENGRAM_RETURN_IF_ERROR(st);
    std::sort(out.begin(), out.end(), NewerEventFirst);
    if (offset >= out.size()) return std::vector<MemoryEventRecord>{};
    const size_t end = std::min(out.size(), offset + std::min(limit, out.size()));
    return std::vector<MemoryEventRecord>(out.begin() + static_cast<std::ptrdiff_t>(offset),
                                          out.begin() + static_cast<std::ptrdiff_t>(end));
  });
}

Status SqliteStore::InsertFeedback(std::string_view workspace,
                                   const MemoryFeedbackRecord& feedback) {
  return Write([&](SqlTxn& txn) { return memory_sql::InsertFeedback(txn, workspace, feedback); });
}

Result<std::vector<MemoryFeedbackRecord>> SqliteStore::GetFeedback(std::string_view workspace,
                                                                   std::string_view memory_id) {
  return Read([&](SqlTxn& txn) { return memory_sql::Feedback(txn, workspace, memory_id); });
}

Result<bool> SqliteStore::ImportAgentMemory(const AgentMemoryImport& item) {
  bool written = false;
  Status st = Submit([&](sqlite3* db) -> Status {
    sqlite::SqliteTxn txn(db);
    Result<bool> imported = memory_sql::Import(
        txn, item, [db](MemoryRecord& row) { return sqlite::InsertMemoryRow(db, "memory", row); });
    if (!imported.ok()) return imported.status();
    written = *imported;
    return Status::Ok();
  });
  if (!st.ok()) return st;
  return written;
}

}  // namespace engram
