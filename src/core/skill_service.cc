#include "core/skill_service.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <cctype>
#include <functional>
#include <nlohmann/json.hpp>

#include "common/ids.h"
#include "common/json_reader.h"
#include "common/time_util.h"
#include "core/paging.h"

namespace engram {

namespace {

using json = nlohmann::json;

std::string Dump(const json& j) { return j.dump(-1, ' ', false, json::error_handler_t::replace); }

std::string EncodeAddRequest(const SkillAddRequest& r) {
  json messages = json::array();
  for (const auto& m : r.messages) messages.push_back({{"role", m.role}, {"content", m.content}});
  return Dump({{"messages", messages}, {"user_id", r.user_id}, {"agent_id", r.agent_id}});
}

Result<SkillAddRequest> DecodeAddRequest(const std::string& workspace, const std::string& text) {
  json j = ReadJsonOrDiscarded(text, kStoredJsonLimits);
  if (!j.is_object() || !j.contains("messages") || !j["messages"].is_array()) {
    return Status::Internal("stored skill task request is not readable");
  }
  SkillAddRequest r;
  r.workspace = workspace;
  for (const auto& m : j["messages"]) {
    r.messages.push_back({m.value("role", ""), m.value("content", ""), 0});
  }
  r.user_id = j.value("user_id", "");
  r.agent_id = j.value("agent_id", "");
  return r;
}

// Front matter `metadata` with _meta.json's keys added (front matter wins).
std::string MergeMetadata(const std::string& front_json, const std::string& meta_json) {
  json merged = ReadJsonOrDiscarded(meta_json, kStoredJsonLimits);
  if (!merged.is_object()) merged = json::object();
  json front = ReadJsonOrDiscarded(front_json, kStoredJsonLimits);
  if (front.is_object()) {
    for (auto& [k, v] : front.items()) merged[k] = v;
  }
  return Dump(merged);
}

// Sets SKILL.md's front matter from the record's fields when they differ from what it says.
Status SyncSkillMd(SkillRecord& r) {
  std::string& md = r.files["SKILL.md"];
  auto parsed = ParseSkillMd(md);
  if (parsed.ok() && parsed->front.name == r.name && parsed->front.description == r.description &&
      parsed->front.version == r.version && parsed->front.tags == r.tags &&
      parsed->front.triggers == r.triggers) {
    return Status::Ok();
  }
  SkillFrontMatter f;
  f.name = r.name;
  f.description = r.description;
  f.version = r.version;
  f.tags = r.tags;
  f.triggers = r.triggers;
  auto rewritten = RewriteFrontMatter(md, f);
  md = rewritten.ok() ? *rewritten : RenderSkillMd(f, "\n" + md);
  return Status::Ok();
}

}  // namespace

std::string NextSkillVersion(const std::string& version) {
  size_t end = version.find_last_of("0123456789");
  if (end == std::string::npos) return version.empty() ? "1.0.0" : version + ".1";
  size_t begin = end;
  while (begin > 0 && std::isdigit(static_cast<unsigned char>(version[begin - 1]))) --begin;
  const std::string digits = version.substr(begin, end - begin + 1);
  if (digits.size() > 15) return version + ".1";
  return version.substr(0, begin) + std::to_string(std::stoll(digits) + 1) +
         version.substr(end + 1);
}

SkillService::SkillService(SkillStore* store, const Analyzer* analyzer, const Embedder* embedder,
                           const SkillExtractor* extractor, SkillServiceOptions options)
    : store_(store),
      analyzer_(analyzer),
      embedder_(embedder),
      extractor_(extractor),
      options_(std::move(options)),
      clock_(options_.clock != nullptr ? options_.clock : RealClock()),
      indexes_(ShardDomain::kSkills, options_.budget, [this](const std::string&) {
        return std::make_shared<SkillIndex>(analyzer_, options_.index);
      }) {
  if (embedder_ != nullptr) {
    options_.index.vector_model = embedder_->model_id();
    options_.index.vectors.dim = embedder_->dimension();
  }
}

SkillService::~SkillService() { Shutdown(); }

// ---------------------------------------------------------------------------------------------
// Indexes

bool SkillService::WorkspaceLoaded(const std::string& workspace) const {
  return indexes_.Loaded(workspace);
}

Result<std::shared_ptr<SkillIndex>> SkillService::Index(const std::string& workspace) {
  // On a shared store another node may have changed the workspace's skills: an index older than
  // the store's version is loaded again (skills are few; a whole reload is cheap).
  int64_t version = 0;
  if (store_->shared()) {
    auto v = store_->ScopeVersion(ScopeKeySkills(workspace));
    if (!v.ok()) return v.status();
    version = *v;
  }
  // Held by the caller from here on: the budget does not drop an index while it is in use.
  std::shared_ptr<SkillIndex> index = indexes_.Hold(workspace, version).shard;
  bool loaded_now = false;
  if (!index->loaded()) {
    // One load at a time; a caller that waited here finds it loaded.
    MutexLock load(&load_mu_);
    if (!index->loaded()) {
      auto records = store_->LoadSkills(workspace);
      if (!records.ok()) return records.status();  // the next use loads it again
      // Vectors of another model (or none) are recomputed; skills are few, so this is cheap.
      std::vector<SkillRecord*> missing;
      for (auto& r : *records) {
        if (embedder_ != nullptr && (r.vector.empty() || r.vector_model != embedder_->model_id())) {
          missing.push_back(&r);
        }
      }
      Embed(missing);
      for (const auto& r : *records) index->Upsert(r);
      index->MarkLoaded();
      loaded_now = true;
    }
  }
  indexes_.Used(loaded_now);
  return index;
}

void SkillService::Embed(std::vector<SkillRecord*> records) const {
  if (embedder_ == nullptr || records.empty()) return;
  std::vector<std::string> texts;
  for (const SkillRecord* r : records) texts.push_back(SkillIntentText(*r));
  auto vectors = embedder_->EmbedBatch(texts);
  if (!vectors.ok()) {
    // BM25 still finds them; the vectors are computed again at the next load.
    spdlog::warn("skills: embedding {} skill(s) failed: {}", records.size(),
                 vectors.status().ToString());
    return;
  }
  for (size_t i = 0; i < records.size(); ++i) {
    records[i]->vector = std::move((*vectors)[i]);
    records[i]->vector_model = embedder_->model_id();
  }
}

size_t SkillService::OwnerStripe(const std::string& workspace, const std::string& owner) const {
  return std::hash<std::string>{}(workspace + '\x1f' + owner) % kStripes;
}

Result<SkillChange> SkillService::PlanWrite(const std::string& workspace, SkillIndex& index,
                                            SkillRecord incoming, int64_t now) {
  SkillChange change;
  incoming.workspace = workspace;
  incoming.updated_at_us = now;
  auto existing_id = index.IdByName(incoming.owner, incoming.name);
  if (!existing_id) {
    change.op = SkillChange::Op::kInsert;
    incoming.id = NewId("s");
    incoming.created_at_us = now;
    if (incoming.version.empty()) incoming.version = "1.0.0";
  } else {
    auto current = store_->GetSkill(workspace, *existing_id);
    if (!current.ok()) return current.status();
    change.op = SkillChange::Op::kUpdate;
    incoming.id = current->id;
    incoming.created_at_us = current->created_at_us;
    incoming.updated_at_us = std::max(now, current->updated_at_us);
    if (incoming.agent_id.empty()) incoming.agent_id = current->agent_id;
    if (incoming.version.empty() || incoming.version == current->version) {
      incoming.version = NextSkillVersion(current->version);
    }
    change.previous = std::move(*current);
  }
  ENGRAM_RETURN_IF_ERROR(SyncSkillMd(incoming));
  change.record = std::move(incoming);
  return change;
}

// ---------------------------------------------------------------------------------------------
// Synchronous operations

Result<std::vector<SkillRecord>> SkillService::Import(const SkillImportRequest& request) {
  auto packages = ParseSkillArchive(request.zip, options_.archive);
  if (!packages.ok()) return packages.status();
  auto index = Index(request.workspace);
  if (!index.ok()) return index.status();
  MutexLock owner(&owner_locks_[OwnerStripe(request.workspace, request.user_id)]);
  const int64_t now = clock_->WallMicros();
  SkillChangeBatch batch;
  batch.workspace = request.workspace;
  for (SkillPackage& p : *packages) {
    SkillRecord r;
    r.owner = request.user_id;
    r.agent_id = request.agent_id;
    const SkillFrontMatter& f = p.skill_md.front;
    r.name = f.name;
    r.description = f.description;
    r.version = f.version;
    r.tags = f.tags;
    r.triggers = f.triggers;
    r.license = f.license;
    r.metadata_json = MergeMetadata(f.metadata_json, p.meta_json);
    r.files = std::move(p.files);
    auto change = PlanWrite(request.workspace, **index, std::move(r), now);
    if (!change.ok()) return change.status();
    batch.changes.push_back(std::move(*change));
  }
  std::vector<SkillRecord*> to_embed;
  for (auto& c : batch.changes) to_embed.push_back(&c.record);
  Embed(to_embed);
  ENGRAM_RETURN_IF_ERROR(store_->ApplySkillChanges(batch));
  std::vector<SkillRecord> out;
  for (auto& c : batch.changes) {
    (*index)->Upsert(c.record);
    out.push_back(std::move(c.record));
  }
  spdlog::info("skills: imported {} skill(s) into workspace {}", out.size(), request.workspace);
  return out;
}

Result<std::vector<SkillHit>> SkillService::Search(const SkillSearchRequest& request) {
  auto index = Index(request.workspace);
  if (!index.ok()) return index.status();
  SkillQuery q;
  q.terms = analyzer_->AnalyzeQuery(request.query);
  if (embedder_ != nullptr) {
    auto v = embedder_->EmbedQuery(request.query);
    if (v.ok()) {
      q.vector = std::move(*v);
    } else {
      spdlog::warn("skill search: query embedding failed ({}); answering with BM25 only",
                   v.status().ToString());
    }
  }
  q.user_id = request.user_id;
  q.agent_id = request.agent_id;
  q.k = request.size;
  q.explain = request.explain;
  return (*index)->Search(q);
}

namespace {

// One answer for "no such skill" and "someone else's skill".
Status SkillNotFound(const std::string& id) {
  return Status::NotFound(fmt::format("skill {} not found", id));
}

// Whether a call naming `user_id` (or none: the workspace's view) may act on `owner`'s skill.
bool MayActOn(const std::optional<std::string>& user_id, const std::string& owner) {
  return !user_id || *user_id == owner;
}

}  // namespace

Result<std::vector<SkillSummary>> SkillService::List(const std::string& workspace,
                                                     const std::string& user_id,
                                                     const std::string& agent_id,
                                                     size_t page_number, size_t page_size,
                                                     size_t* total) {
  auto index = Index(workspace);
  if (!index.ok()) return index.status();
  return (*index)->List(user_id, agent_id, (page_number - 1) * page_size, page_size, total);
}

Result<SkillRecord> SkillService::Get(const std::string& workspace, const std::string& id,
                                      const std::optional<std::string>& user_id) {
  auto skill = store_->GetSkill(workspace, id);
  if (skill.status().code() == StatusCode::kNotFound) return SkillNotFound(id);
  if (!skill.ok()) return skill.status();
  if (!MayActOn(user_id, skill->owner)) return SkillNotFound(id);
  return skill;
}

Result<std::vector<SkillVersionRecord>> SkillService::Versions(const std::string& workspace,
                                                               const std::string& id) {
  return store_->GetSkillVersions(workspace, id);
}

Result<SkillRecord> SkillService::Update(const SkillUpdateRequest& request) {
  auto index = Index(request.workspace);
  if (!index.ok()) return index.status();
  auto summary = (*index)->Get(request.id);
  if (!summary || summary->owner != request.user_id) return SkillNotFound(request.id);
  MutexLock owner(&owner_locks_[OwnerStripe(request.workspace, summary->owner)]);
  // Re-read under the lock: a task or another update may have changed it meanwhile.
  auto current = store_->GetSkill(request.workspace, request.id);
  if (!current.ok()) return current.status();
  SkillRecord next = *current;
  bool version_set = false;
  for (const auto& [path, content] : request.files) {
    if (!content) {
      if (path == "SKILL.md") return Status::InvalidParameter("files.SKILL.md cannot be removed");
      next.files.erase(path);
      continue;
    }
    next.files[path] = *content;
    if (path != "SKILL.md") continue;
    auto parsed = ParseSkillMd(*content, options_.archive.skill_md);
    if (!parsed.ok()) {
      return Status::InvalidParameter(fmt::format("files.SKILL.md: {}", parsed.status().message()));
    }
    const SkillFrontMatter& f = parsed->front;
    next.name = f.name;
    next.description = f.description;
    next.tags = f.tags;
    next.triggers = f.triggers;
    next.license = f.license;
    if (!f.version.empty() && f.version != current->version) {
      next.version = f.version;
      version_set = true;
    }
  }
  if (request.name) next.name = *request.name;
  if (request.description) next.description = *request.description;
  if (request.tags) next.tags = *request.tags;
  if (request.agent_id) next.agent_id = *request.agent_id;
  if (request.version) {
    next.version = *request.version;
    version_set = true;
  }
  // Every change is a new version; the replaced state is kept in the history.
  if (!version_set) next.version = NextSkillVersion(current->version);
  next.updated_at_us = std::max(clock_->WallMicros(), current->updated_at_us);
  ENGRAM_RETURN_IF_ERROR(SyncSkillMd(next));
  next.vector.clear();
  Embed({&next});
  SkillChangeBatch batch;
  batch.workspace = request.workspace;
  batch.changes.push_back({SkillChange::Op::kUpdate, next, *current});
  ENGRAM_RETURN_IF_ERROR(store_->ApplySkillChanges(batch));
  (*index)->Upsert(next);
  return next;
}

Status SkillService::Delete(const std::string& workspace, const std::string& id,
                            const std::optional<std::string>& user_id) {
  auto index = Index(workspace);
  if (!index.ok()) return index.status();
  auto summary = (*index)->Get(id);
  if (!summary || !MayActOn(user_id, summary->owner)) return SkillNotFound(id);
  MutexLock owner(&owner_locks_[OwnerStripe(workspace, summary->owner)]);
  SkillChangeBatch batch;
  batch.workspace = workspace;
  SkillChange change;
  change.op = SkillChange::Op::kDelete;
  change.record.id = id;
  batch.changes.push_back(std::move(change));
  ENGRAM_RETURN_IF_ERROR(store_->ApplySkillChanges(batch));
  (*index)->Remove(id);
  return Status::Ok();
}

// ---------------------------------------------------------------------------------------------
// Tasks (skills/add): the same life cycle as MemoryService's events.

Status SkillService::Start() {
  {
    MutexLock lock(&running_mu_);
    if (started_) return Status::Ok();
    started_ = true;
  }
  auto unfinished = store_->UnfinishedSkillTasks();
  if (!unfinished.ok()) return unfinished.status();
  if (!unfinished->empty()) {
    spdlog::info("skill tasks: resuming {} unfinished task(s)", unfinished->size());
  }
  for (auto& t : *unfinished) Enqueue(std::move(t));
  std::function<void()> poll;
  if (store_->shared()) poll = [this] { ClaimOrphanedTasks(); };
  jobs_.Start(
      {.workers = options_.task_workers,
       .poll_interval = options_.job_poll_interval,
       .name = "skill-tasks",
       .clock = clock_},
      [this](SkillTaskRecord& t) { RunTask(t); }, {}, std::move(poll));
  return Status::Ok();
}

void SkillService::ClaimOrphanedTasks() {
  // Only tasks whose lease ran out (their node died) come back from a shared store.
  auto claimed = store_->UnfinishedSkillTasks();
  if (!claimed.ok()) {
    spdlog::warn("skill tasks: claiming orphaned tasks failed: {}", claimed.status().ToString());
    return;
  }
  for (auto& t : *claimed) {
    {
      MutexLock lock(&running_mu_);
      if (running_ids_.count(t.id)) continue;
    }
    spdlog::info("skill tasks: took over task {} of another node", t.id);
    Enqueue(std::move(t));
  }
}

// Queued tasks stay pending in the store and run at the next start.
void SkillService::Shutdown() { jobs_.Shutdown(); }

size_t SkillService::queued_tasks() const { return jobs_.pending(); }

Result<std::string> SkillService::Add(const SkillAddRequest& request) {
  if (queued_tasks() >= options_.max_queued_tasks) {
    return Status(StatusCode::kThrottled,
                  "too many skill tasks are pending; retry after a short wait");
  }
  SkillTaskRecord task;
  task.id = NewId("st");
  task.workspace = request.workspace;
  task.status = JobStatus::kPending;
  task.request_json = EncodeAddRequest(request);
  task.created_at_us = task.updated_at_us = clock_->WallMicros();
  ENGRAM_RETURN_IF_ERROR(store_->InsertSkillTask(task));
  std::string id = task.id;
  Enqueue(std::move(task));
  return id;
}

// A task being run is "running" until its skills are in the index as well as the store, so a
// client that sees "completed" and then searches finds them.
void SkillService::ShowRunning(SkillTaskRecord& task) {
  if (!running_ids_.count(task.id)) return;
  task.status = JobStatus::kRunning;
  task.skill_ids.clear();
  task.error_message.clear();
}

Result<SkillTaskRecord> SkillService::GetTask(const std::string& workspace, const std::string& id) {
  auto task = store_->GetSkillTask(workspace, id);
  if (task.ok()) {
    MutexLock lock(&running_mu_);
    ShowRunning(*task);
  }
  return task;
}

Result<std::vector<SkillTaskRecord>> SkillService::ListTasks(const std::string& workspace,
                                                             size_t page_number, size_t page_size,
                                                             size_t* total) {
  const size_t offset = PageOffset(page_number, page_size);
  auto tasks = store_->ListSkillTasks(workspace, offset, page_size, total);
  if (!tasks.ok()) return tasks;
  MutexLock lock(&running_mu_);
  for (SkillTaskRecord& task : *tasks) ShowRunning(task);
  return tasks;
}

void SkillService::Enqueue(SkillTaskRecord task) {
  size_t stripe = 0;  // an unreadable request fails at once in RunTask; any stripe will do
  auto request = DecodeAddRequest(task.workspace, task.request_json);
  if (request.ok()) stripe = OwnerStripe(task.workspace, request->user_id);
  jobs_.Push(std::move(task), stripe);
}

void SkillService::RetryLater(const SkillTaskRecord& task, size_t stripe) {
  // This node holds the task's lease and keeps renewing it, so no other node takes it over and no
  // restart is coming: unless it is queued again here, a passing store error would leave it
  // pending for good. The pause keeps an outage of the store from becoming a busy loop, without
  // holding a worker; the task keeps its place before its owner's later tasks. Shutdown drops the
  // queued copy, and the next start resumes it from the store.
  const auto pause = jobs_.retry_pause();
  spdlog::debug("skill task {}: runs again in {} ms", task.id, pause.count());
  jobs_.PushAfter(task, pause, stripe);
}

void SkillService::RunTask(const SkillTaskRecord& task) {
  auto fail = [&](const Status& why) {
    SkillChangeBatch batch;
    batch.workspace = task.workspace;
    SkillTaskRecord end = task;
    end.status = JobStatus::kFailed;
    end.error_message = why.message();
    batch.finish_task = end;
    if (Status st = store_->ApplySkillChanges(std::move(batch)); !st.ok()) {
      spdlog::error("skill task {}: could not record failure: {}", task.id, st.ToString());
    }
    spdlog::info("skill task {} failed ({})", task.id, ApiCodeOf(why.code()));
  };
  auto request = DecodeAddRequest(task.workspace, task.request_json);
  if (!request.ok()) return fail(request.status());
  auto index = Index(task.workspace);
  if (!index.ok()) {
    // The store cannot be read: try again later rather than fail the task.
    spdlog::error("skill task {}: index load failed: {}", task.id, index.status().ToString());
    return RetryLater(task, OwnerStripe(task.workspace, request->user_id));
  }
  // "running" is not written to the store (an fsync per task for a transient state; after a crash
  // pending and running tasks resume alike): GetTask reports it from running_ids_.
  {
    MutexLock lock(&running_mu_);
    running_ids_.insert(task.id);
  }
  struct Done {
    SkillService* self;
    const std::string& id;
    ~Done() {
      MutexLock lock(&self->running_mu_);
      self->running_ids_.erase(id);
    }
  } done{this, task.id};
  auto drafts = extractor_->Extract(request->messages);
  if (!drafts.ok()) return fail(drafts.status());
  MutexLock owner(&owner_locks_[OwnerStripe(task.workspace, request->user_id)]);
  const int64_t now = clock_->WallMicros();
  SkillChangeBatch batch;
  batch.workspace = task.workspace;
  SkillTaskRecord end = task;
  end.status = JobStatus::kSucceeded;
  for (const SkillDraft& d : *drafts) {
    SkillRecord r;
    r.owner = request->user_id;
    r.agent_id = request->agent_id;
    r.name = d.name;
    r.description = d.description;
    r.tags = d.tags;
    r.triggers = d.triggers;
    r.files["SKILL.md"] = RenderSkillDraft(d);
    auto change = PlanWrite(task.workspace, **index, std::move(r), now);
    if (!change.ok()) return fail(change.status());
    end.skill_ids.push_back(change->record.id);
    batch.changes.push_back(std::move(*change));
  }
  std::vector<SkillRecord*> to_embed;
  for (auto& c : batch.changes) to_embed.push_back(&c.record);
  Embed(to_embed);
  batch.finish_task = end;
  if (Status st = store_->ApplySkillChanges(batch); !st.ok()) {
    spdlog::error("skill task {}: store write failed: {}", task.id, st.ToString());
    return fail(st);
  }
  for (const auto& c : batch.changes) (*index)->Upsert(c.record);
  spdlog::debug("skill task {} completed: {} skill(s)", task.id, batch.changes.size());
}

}  // namespace engram
