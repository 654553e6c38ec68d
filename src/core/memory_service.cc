// MemoryService: reads, direct updates and deletes. Events (adds) are in memory_events.cc.
#include "core/memory_service.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <functional>
#include <nlohmann/json.hpp>
#include <tuple>

#include "common/ids.h"
#include "common/json_reader.h"
#include "common/time_util.h"
#include "core/memory_provenance.h"
#include "core/paging.h"
#include "core/query_time.h"
#include "core/shard_graphs.h"
#include "core/shard_keys.h"
#include "index/question_form.h"

namespace engram {

MemoryService::MemoryService(AgentMemoryStore* store, const Analyzer* analyzer,
                             const Embedder* embedder, const MemoryExtractor* extractor,
                             MemoryServiceOptions options)
    : store_(store),
      analyzer_(analyzer),
      embedder_(embedder),
      extractor_(extractor),
      options_(std::move(options)),
      clock_(options_.clock != nullptr ? options_.clock : RealClock()),
      categorizer_(embedder_, options_.categorizer),
      shards_(ShardDomain::kMemories, options_.budget, [this](const std::string& key) {
        MemoryShardOptions shard = options_.shard;
        SetShardGraph(&shard.vectors, options_.graph_dir, ShardDomain::kMemories, key);
        return std::make_shared<MemoryShard>(analyzer_, std::move(shard));
      }) {
  if (embedder_ != nullptr) {
    options_.shard.vector_model = embedder_->model_id();
    options_.shard.vectors.dim = embedder_->dimension();
  }
  listener_id_ = store_->AddChangeListener([this](const std::string& key) { OnScopeChanged(key); });
}

MemoryService::~MemoryService() { Shutdown(); }

void MemoryService::OnScopeChanged(const std::string& scope_key) {
  // Agent-memory keys are "a<US>workspace" (ScopeKeyAgentMemories).
  if (scope_key.size() < 2 || scope_key[0] != 'a' || scope_key[1] != '\x1f') return;
  const std::string workspace = scope_key.substr(2);
  std::shared_ptr<MemoryShard> shard = shards_.Resident(MemoryShardKey(workspace));
  if (!shard) return;  // not cached here: the next load reads everything anyway
  Status st = shard->Refresh(store_, workspace);
  if (!st.ok()) spdlog::debug("early refresh of workspace memories failed: {}", st.ToString());
}

Result<std::shared_ptr<MemoryShard>> MemoryService::Shard(const std::string& workspace) {
  // Held by the caller from here on: the budget does not drop a shard while it is in use.
  auto [shard, created] = shards_.Hold(MemoryShardKey(workspace));
  Status st = shard->EnsureLoaded(store_, workspace);
  if (!st.ok()) return st;
  if (!created) {
    st = shard->Refresh(store_, workspace);  // other nodes' writes (shared stores only)
    if (!st.ok()) return st;
  }
  // Memories stored without a vector of the current model (embedder off, model changed, or an
  // embedding that failed) are embedded in the background; BM25 finds them meanwhile. Every load
  // queues this, also a load after the budget dropped the shard.
  if (created && embedder_ != nullptr) jobs_.Push(BackfillJob{workspace});
  shards_.Used(created);
  return shard;
}

bool MemoryService::WorkspaceLoaded(const std::string& workspace) const {
  return shards_.Loaded(MemoryShardKey(workspace));
}

std::shared_ptr<MemoryShard> MemoryService::ResidentShard(const std::string& workspace) const {
  return shards_.Resident(MemoryShardKey(workspace));
}

size_t MemoryService::ScopeStripe(const std::string& workspace, const std::string& user_id,
                                  const std::string& agent_id, const std::string& run_id,
                                  const std::string& app_id) const {
  std::string key = workspace;
  for (const std::string* part : {&user_id, &agent_id, &run_id, &app_id}) {
    key += '\x1f';
    key += *part;
  }
  return std::hash<std::string>{}(key) % kStripes;
}

Mutex& MemoryService::ScopeLock(const std::string& workspace, const std::string& user_id,
                                const std::string& agent_id, const std::string& run_id,
                                const std::string& app_id) {
  return scope_locks_[ScopeStripe(workspace, user_id, agent_id, run_id, app_id)];
}

Result<std::vector<MemoryHit>> MemoryService::Search(const MemorySearchRequest& request) {
  if (!request.filter.ScopeKeys()) {
    return Status::InvalidParameter(
        "at least one of user_id, agent_id, run_id, app_id must constrain the search (top-level or "
        "in filters)");
  }
  auto shard = Shard(request.workspace);
  if (!shard.ok()) return shard.status();
  MemoryQuery query;
  query.terms = analyzer_->AnalyzeQuery(request.query);
  if (embedder_ != nullptr) {
    // Embedded without its question mark, as Leaderboard searches are: the encoder puts
    // questions near questions, whatever they ask about.
    auto v = embedder_->EmbedQuery(std::string(WithoutQuestionMark(request.query)));
    if (!v.ok()) {
      // BM25 still answers; the vector half of the search is lost for this query only.
      spdlog::warn("memory search: query embedding failed ({}); answering with BM25 only",
                   v.status().ToString());
    } else {
      query.vector = std::move(*v);
    }
  }
  query.filter = &request.filter;
  query.k = request.top_k;
  query.threshold = request.threshold;
  query.now_us = clock_->WallMicros();
  // A year alone ("in 2022") ranks memories of that year higher here, unlike in the Leaderboard's
  // conversations (measured: docs/retrieval.md).
  query.dates = QueryTimeRange(request.query, request.reference_us, /*whole_years=*/true);
  query.names_identifier = NamesCodeIdentifier(request.query);
  query.explain = request.explain;
  query.show_replaced = request.show_replaced;
  auto hits = (*shard)->Search(query);
  if (hits.ok() && rerank_.enabled()) {
    rerank_.Apply(request.query, &*hits,
                  [](const MemoryHit& h) { return std::string_view(h.memory.text); });
  }
  return hits;
}

Result<AgentMemory> MemoryService::Get(const std::string& workspace, const std::string& id) {
  auto shard = Shard(workspace);
  if (!shard.ok()) return shard.status();
  auto m = (*shard)->Get(id, clock_->WallMicros());
  if (!m) return Status::NotFound(fmt::format("memory {} not found", id));
  return *m;
}

Result<AgentMemory> MemoryService::Update(const MemoryUpdateRequest& request) {
  auto shard = Shard(request.workspace);
  if (!shard.ok()) return shard.status();
  auto current = (*shard)->Get(request.id, clock_->WallMicros());
  if (!current) return Status::NotFound(fmt::format("memory {} not found", request.id));
  MutexLock scope(&ScopeLock(request.workspace, current->user_id, current->agent_id,
                             current->run_id, current->app_id));
  // Re-read under the scope lock: an event may have changed or deleted it meanwhile.
  current = (*shard)->Get(request.id, clock_->WallMicros());
  if (!current) return Status::NotFound(fmt::format("memory {} not found", request.id));

  MemoryChange change = ChangeOf(*current, MemoryChange::Op::kUpdate);
  change.record.updated_at_us = std::max(clock_->WallMicros(), current->updated_at_us);
  if (request.text && *request.text != current->text) {
    change.record.text = *request.text;
    change.record.provenance_json = EditProvenance(*current, change.record.updated_at_us);
  }
  if (request.timestamp_us) change.record.created_at_us = *request.timestamp_us;
  if (request.expires_at_us) change.record.expires_at_us = *request.expires_at_us;
  if (request.metadata_patch_json) {
    nlohmann::json merged = ReadJsonOrDiscarded(current->metadata_json, kStoredJsonLimits);
    if (!merged.is_object()) merged = nlohmann::json::object();
    nlohmann::json patch = ReadJsonOrDiscarded(*request.metadata_patch_json, kStoredJsonLimits);
    if (!patch.is_object()) return Status::InvalidParameter("metadata must be an object");
    for (auto& [key, value] : patch.items()) merged[key] = value;
    change.record.metadata_json =
        merged.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  }
  if (embedder_ != nullptr) {
    if (request.text && *request.text != current->text) {
      auto v = embedder_->Embed(change.record.text);
      // Without a vector the memory is still stored and found by BM25; the backfill re-embeds
      // it when the shard is next loaded.
      if (v.ok()) {
        change.record.vector = std::move(*v);
        change.record.vector_model = embedder_->model_id();
        // The add's own category set is not kept with the memory: the defaults describe it now.
        auto categories = categorizer_.Assign({change.record.vector}, DefaultCategories());
        if (categories.ok()) {
          change.record.categories = std::move(categories->front());
        } else {
          spdlog::warn("memory update: categorizing failed ({}); categories kept",
                       categories.status().ToString());
        }
      }
    }
  }
  MemoryChangeBatch batch;
  batch.workspace = request.workspace;
  batch.changes.push_back(change);
  auto outcome = store_->ApplyMemoryChanges(batch);
  if (!outcome.ok()) return outcome.status();
  if (!outcome->applied[0]) return Status::NotFound(fmt::format("memory {} not found", request.id));
  ApplyToShard(**shard, batch, *outcome);
  AgentMemory updated = *current;
  updated.text = change.record.text;
  updated.metadata_json = change.record.metadata_json;
  updated.updated_at_us = change.record.updated_at_us;
  updated.created_at_us = change.record.created_at_us;
  updated.expires_at_us = change.record.expires_at_us;
  updated.categories = change.record.categories;
  updated.provenance_json = change.record.provenance_json;
  return updated;
}

Status MemoryService::Delete(const std::string& workspace, const std::string& id) {
  auto shard = Shard(workspace);
  if (!shard.ok()) return shard.status();
  auto current = (*shard)->Get(id, clock_->WallMicros());
  if (!current) return Status::NotFound(fmt::format("memory {} not found", id));
  MutexLock scope(
      &ScopeLock(workspace, current->user_id, current->agent_id, current->run_id, current->app_id));
  MemoryChangeBatch batch;
  batch.workspace = workspace;
  batch.changes.push_back(ChangeOf(*current, MemoryChange::Op::kDelete));
  auto outcome = store_->ApplyMemoryChanges(batch);
  if (!outcome.ok()) return outcome.status();
  if (!outcome->applied[0]) return Status::NotFound(fmt::format("memory {} not found", id));
  ApplyToShard(**shard, batch, *outcome);
  return Status::Ok();
}

Result<std::vector<AgentMemory>> MemoryService::List(const std::string& workspace,
                                                     const MemoryFilter& filter, size_t page_number,
                                                     size_t page_size, size_t* total) {
  auto shard = Shard(workspace);
  if (!shard.ok()) return shard.status();
  const size_t offset = PageOffset(page_number, page_size);
  return (*shard)->List(filter, clock_->WallMicros(), offset, page_size, total);
}

Result<std::vector<CatalogEntity>> MemoryService::NamedEntities(const std::string& workspace,
                                                                const MemoryFilter& filter,
                                                                size_t page_number,
                                                                size_t page_size, size_t* total) {
  if (!filter.ScopeKeys()) {
    return Status::InvalidParameter(
        "at least one of user_id, agent_id, run_id, app_id is required");
  }
  auto shard = Shard(workspace);
  if (!shard.ok()) return shard.status();
  std::vector<CatalogEntity> all = (*shard)->NamedEntities(filter, clock_->WallMicros());
  *total = all.size();
  const size_t offset = std::min(all.size(), PageOffset(page_number, page_size));
  const size_t end = offset + std::min(page_size, all.size() - offset);
  return std::vector<CatalogEntity>(std::make_move_iterator(all.begin() + offset),
                                    std::make_move_iterator(all.begin() + end));
}

Result<size_t> MemoryService::DeleteAll(const std::string& workspace, const MemoryFilter& filter) {
  if (!filter.ScopeKeys()) {
    return Status::InvalidParameter(
        "at least one of user_id, agent_id, run_id, app_id is required");
  }
  auto shard = Shard(workspace);
  if (!shard.ok()) return shard.status();
  size_t total = 0;
  std::vector<AgentMemory> all =
      (*shard)->List(filter, clock_->WallMicros(), 0, std::numeric_limits<size_t>::max(), &total);
  MemoryChangeBatch batch;
  batch.workspace = workspace;
  for (const AgentMemory& m : all) batch.changes.push_back(ChangeOf(m, MemoryChange::Op::kDelete));
  if (batch.changes.empty()) return size_t{0};
  auto outcome = store_->ApplyMemoryChanges(batch);
  if (!outcome.ok()) return outcome.status();
  ApplyToShard(**shard, batch, *outcome);
  size_t deleted = 0;
  for (bool applied : outcome->applied) deleted += applied ? 1 : 0;
  return deleted;
}

Result<std::vector<HistoryRecord>> MemoryService::History(const std::string& workspace,
                                                          const std::string& id) {
  auto history = store_->GetHistory(workspace, id);
  if (!history.ok()) return history.status();
  if (history->empty()) return Status::NotFound(fmt::format("memory {} not found", id));
  return history;
}

Result<std::vector<MemoryEntity>> MemoryService::Entities(const std::string& workspace) {
  auto shard = Shard(workspace);
  if (!shard.ok()) return shard.status();
  std::vector<MemoryEntity> out;
  for (ScopeSummary& s : (*shard)->Scopes(clock_->WallMicros())) {
    // "user_id" -> "user", and so on: mem0's entity types.
    std::string type = s.field.substr(0, s.field.size() - 3);
    out.push_back({.type = std::move(type),
                   .name = std::move(s.value),
                   .total_memories = s.memories,
                   .created_at_us = s.first_created_at_us,
                   .updated_at_us = s.last_updated_at_us});
  }
  std::sort(out.begin(), out.end(), [](const MemoryEntity& a, const MemoryEntity& b) {
    if (a.updated_at_us != b.updated_at_us) return a.updated_at_us > b.updated_at_us;
    return std::tie(a.type, a.name) < std::tie(b.type, b.name);
  });
  return out;
}

Result<std::vector<MemoryEventRecord>> MemoryService::ListEvents(const std::string& workspace,
                                                                 size_t page_number,
                                                                 size_t page_size, size_t* total) {
  const size_t offset = PageOffset(page_number, page_size);
  auto events = store_->ListEvents(workspace, offset, page_size, total);
  if (!events.ok()) return events;
  // As GetEvent: an event is RUNNING until its changes are in the shard too.
  MutexLock lock(&running_mu_);
  for (MemoryEventRecord& e : *events) {
    if (running_ids_.count(e.id)) {
      e.status = JobStatus::kRunning;
      e.result_json.clear();
      e.error_message.clear();
    }
  }
  return events;
}

Result<MemoryFeedbackRecord> MemoryService::RecordFeedback(const std::string& workspace,
                                                           const std::string& memory_id,
                                                           const std::string& feedback,
                                                           const std::string& reason) {
  if (feedback != "" && feedback != "POSITIVE" && feedback != "NEGATIVE" &&
      feedback != "VERY_NEGATIVE") {
    return Status::InvalidParameter("feedback: must be POSITIVE, NEGATIVE, VERY_NEGATIVE or null");
  }
  auto shard = Shard(workspace);
  if (!shard.ok()) return shard.status();
  if (!(*shard)->Get(memory_id, clock_->WallMicros())) {
    return Status::NotFound(fmt::format("memory {} not found", memory_id));
  }
  MemoryFeedbackRecord record{.id = NewId("mf"),
                              .memory_id = memory_id,
                              .feedback = feedback,
                              .reason = reason,
                              .created_at_us = clock_->WallMicros()};
  if (Status st = store_->InsertFeedback(workspace, record); !st.ok()) return st;
  return record;
}

void MemoryService::ApplyToShard(MemoryShard& shard, const MemoryChangeBatch& batch,
                                 const MemoryChangeOutcome& outcome) {
  std::vector<MemoryShard::Change> changes;
  changes.reserve(batch.changes.size());
  size_t inserted = 0;
  for (size_t i = 0; i < batch.changes.size(); ++i) {
    const MemoryChange& c = batch.changes[i];
    switch (c.op) {
      case MemoryChange::Op::kInsert:
        changes.push_back({.upsert = &outcome.inserted[inserted++]});
        break;
      case MemoryChange::Op::kUpdate:
        if (outcome.applied[i]) changes.push_back({.upsert = &c.record});
        break;
      case MemoryChange::Op::kDelete:
        changes.push_back({.remove_id = &c.record.id});
        break;
    }
  }
  shard.Apply(changes);
}

void MemoryService::SaveGraphs() {
  if (!options_.graph_dir.empty()) shards_.SaveGraphs();
}

size_t MemoryService::shard_memories() const {
  size_t n = 0;
  shards_.ForEach(
      [&](const std::string&, const std::shared_ptr<MemoryShard>& s) { n += s->size(); });
  return n;
}

}  // namespace engram
