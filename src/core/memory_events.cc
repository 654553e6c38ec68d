// MemoryService: asynchronous adds (events), their worker pool, background re-embedding and the
// purge of expired memories.
#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <future>
#include <nlohmann/json.hpp>
#include <set>
#include <unordered_set>

#include "common/ids.h"
#include "common/json_reader.h"
#include "common/time_util.h"
#include "core/memory_provenance.h"
#include "core/memory_service.h"

namespace engram {

namespace {

using json = nlohmann::json;

std::string Dump(const json& j) { return j.dump(-1, ' ', false, json::error_handler_t::replace); }

// Comparable form of a text for exact-duplicate checks of verbatim memories.
std::string Collapse(std::string_view text) {
  std::string out;
  bool space = false;
  for (char c : text) {
    if (c == ' ' || c == '\t' || c == '\n' || c == '\r') {
      space = !out.empty();
      continue;
    }
    if (space) out += ' ';
    space = false;
    out += c;
  }
  return out;
}

}  // namespace

std::string EncodeAddRequest(const MemoryAddRequest& r) {
  json messages = json::array();
  for (const auto& m : r.messages) {
    json item = {{"role", m.role}, {"content", m.content}, {"time_us", m.time_us}};
    if (!m.name.empty()) item["name"] = m.name;
    messages.push_back(std::move(item));
  }
  json j = {{"messages", messages},
            {"user_id", r.user_id},
            {"agent_id", r.agent_id},
            {"run_id", r.run_id},
            {"metadata", ReadJsonOrDiscarded(r.metadata_json, kStoredJsonLimits)},
            {"infer", r.infer}};
  // Written only when set, so requests stored before these fields existed read the same.
  if (!r.app_id.empty()) j["app_id"] = r.app_id;
  if (!r.custom_instructions.empty()) j["custom_instructions"] = r.custom_instructions;
  if (!r.custom_categories.empty()) {
    json categories = json::array();
    for (const CategorySpec& c : r.custom_categories) {
      categories.push_back({{"name", c.name}, {"description", c.description}});
    }
    j["custom_categories"] = std::move(categories);
  }
  if (r.timestamp_us) j["timestamp_us"] = *r.timestamp_us;
  if (r.expires_at_us) j["expires_at_us"] = *r.expires_at_us;
  return Dump(j);
}

Result<MemoryAddRequest> DecodeAddRequest(const std::string& workspace, const std::string& text) {
  json j = ReadJsonOrDiscarded(text, kStoredJsonLimits);
  if (!j.is_object() || !j.contains("messages") || !j["messages"].is_array()) {
    return Status::Internal("stored event request is not readable");
  }
  MemoryAddRequest r;
  r.workspace = workspace;
  for (const auto& m : j["messages"]) {
    r.messages.push_back({m.value("role", ""), m.value("content", ""),
                          m.value("time_us", int64_t{0}), m.value("name", "")});
  }
  r.user_id = j.value("user_id", "");
  r.agent_id = j.value("agent_id", "");
  r.run_id = j.value("run_id", "");
  r.app_id = j.value("app_id", "");
  r.custom_instructions = j.value("custom_instructions", "");
  if (auto c = j.find("custom_categories"); c != j.end() && c->is_array()) {
    for (const auto& spec : *c) {
      if (!spec.is_object()) continue;
      r.custom_categories.push_back({spec.value("name", ""), spec.value("description", "")});
    }
  }
  r.metadata_json =
      j.contains("metadata") && j["metadata"].is_object() ? Dump(j["metadata"]) : "{}";
  r.infer = j.value("infer", true);
  if (j.contains("timestamp_us")) r.timestamp_us = j["timestamp_us"].get<int64_t>();
  if (j.contains("expires_at_us")) r.expires_at_us = j["expires_at_us"].get<int64_t>();
  return r;
}

Status MemoryService::Start() {
  {
    MutexLock lock(&running_mu_);
    if (started_) return Status::Ok();
    started_ = true;
  }
  auto unfinished = store_->UnfinishedEvents();
  if (!unfinished.ok()) return unfinished.status();
  if (!unfinished->empty()) {
    spdlog::info("memory events: resuming {} unfinished event(s)", unfinished->size());
  }
  for (auto& e : *unfinished) EnqueueEvent(std::move(e));
  std::function<void()> poll;
  if (store_->shared()) poll = [this] { ClaimOrphanedEvents(); };
  jobs_.Start(
      {.workers = options_.event_workers,
       .idle_interval =
           std::chrono::duration_cast<std::chrono::milliseconds>(options_.purge_interval),
       .poll_interval = options_.job_poll_interval,
       .name = "mem-events",
       .clock = clock_},
      [this](Job& job) { RunJob(job); }, [this] { PurgeExpired(); }, std::move(poll));
  return Status::Ok();
}

void MemoryService::ClaimOrphanedEvents() {
  // The store hands over only events whose lease ran out: accepted by a node that died (or whose
  // own lease renewal stalled; an event of ours still running is skipped).
  auto claimed = store_->UnfinishedEvents();
  if (!claimed.ok()) {
    spdlog::warn("memory events: claiming orphaned events failed: {}", claimed.status().ToString());
    return;
  }
  if (claimed->empty()) return;
  spdlog::info("memory events: took over {} event(s) of other nodes", claimed->size());
  for (auto& e : *claimed) {
    {
      MutexLock lock(&running_mu_);
      if (running_ids_.count(e.id)) continue;
    }
    EnqueueEvent(std::move(e));
  }
}

// Queued events stay PENDING in the store and run at the next start. After Shutdown the service
// no longer calls the store from its own threads (the store may be destroyed next).
void MemoryService::Shutdown() {
  const int id = listener_id_.exchange(0);
  if (id != 0) store_->RemoveChangeListener(id);
  jobs_.Shutdown();
}

size_t MemoryService::queued_events() const { return jobs_.pending(); }

void MemoryService::EnqueueEvent(MemoryEventRecord event) {
  auto request = DecodeAddRequest(event.workspace, event.request_json);
  // An undecodable request fails at once in RunEvent; any stripe will do.
  const size_t stripe = request.ok() ? EventStripe(*request) : 0;
  jobs_.Push(std::move(event), stripe);
}

size_t MemoryService::EventStripe(const MemoryAddRequest& request) const {
  return ScopeStripe(request.workspace, request.user_id, request.agent_id, request.run_id,
                     request.app_id);
}

void MemoryService::RunJob(Job& job) {
  if (auto* event = std::get_if<MemoryEventRecord>(&job)) {
    RunEvent(*event);
  } else {
    RunBackfill(std::get<BackfillJob>(job).workspace);
  }
}

Result<std::string> MemoryService::Add(const MemoryAddRequest& request) {
  // Shared: the store's thread may still be inside set_value when the waiter wakes and returns.
  auto done = std::make_shared<std::promise<Result<std::string>>>();
  auto result = done->get_future();
  AddAsync(request, [done](Result<std::string> id) { done->set_value(std::move(id)); });
  return result.get();
}

void MemoryService::AddAsync(const MemoryAddRequest& request,
                             std::function<void(Result<std::string>)> done) {
  // Refused now rather than failing the event later: nothing is stored.
  if (request.infer && !request.custom_instructions.empty() &&
      !extractor_->follows_instructions()) {
    return done(Status::InvalidParameter(fmt::format(
        "custom_instructions: the {} memory extractor cannot follow instructions (configure an "
        "LLM extractor, or leave custom_instructions out)",
        extractor_->name())));
  }
  if (Status st = MemoryCategorizer::Validate(request.custom_categories);
      !request.custom_categories.empty() && !st.ok()) {
    return done(Status::InvalidParameter("custom_categories: " + st.message()));
  }
  if (queued_events() >= options_.max_queued_events) {
    return done(Status(StatusCode::kThrottled,
                       "too many memory events are pending; retry after a short wait"));
  }
  MemoryEventRecord event;
  event.id = NewId("me");
  event.workspace = request.workspace;
  event.status = JobStatus::kPending;
  event.request_json = EncodeAddRequest(request);
  event.created_at_us = event.updated_at_us = clock_->WallMicros();
  // The request is at hand: no need to decode the JSON just encoded from it.
  const size_t stripe = EventStripe(request);
  MemoryEventRecord job = event;
  store_->AcceptEvent(std::move(event), [this, job = std::move(job), stripe,
                                         done = std::move(done)](Status st) mutable {
    if (!st.ok()) return done(st);
    std::string id = job.id;
    jobs_.Push(std::move(job), stripe);
    done(std::move(id));
  });
}

Result<MemoryEventRecord> MemoryService::GetEvent(const std::string& workspace,
                                                  const std::string& id) {
  auto event = store_->GetEvent(workspace, id);
  // A running event is RUNNING until its changes are in the shard as well as in the store, so a
  // client that sees SUCCEEDED and then searches finds them.
  if (event.ok()) {
    MutexLock lock(&running_mu_);
    if (running_ids_.count(id)) {
      event->status = JobStatus::kRunning;
      event->result_json.clear();
      event->error_message.clear();
    }
  }
  return event;
}

void MemoryService::RetryLater(const MemoryEventRecord& event, size_t stripe) {
  // This node holds the event's lease and keeps renewing it, so no other node takes it over and
  // no restart is coming: unless it is queued again here, a passing store error (a dropped
  // connection, a statement timeout) would leave it PENDING for good. The pause keeps an outage
  // of the store from turning into a busy loop, without holding a worker; the delayed event keeps
  // its place before its scope's later events. Shutdown drops the queued copy, and the next start
  // resumes it from the store.
  const auto pause = jobs_.retry_pause();
  spdlog::debug("memory event {}: runs again in {} ms", event.id, pause.count());
  jobs_.PushAfter(event, pause, stripe);
}

void MemoryService::RunEvent(const MemoryEventRecord& event) {
  const auto started = std::chrono::steady_clock::now();
  // The stripe a retry goes to (the event's scope once its request is read).
  size_t stripe = 0;
  auto fail = [&](const Status& why) {
    MemoryChangeBatch batch;
    batch.workspace = event.workspace;
    batch.event_id = event.id;
    MemoryEventRecord end = event;
    end.status = JobStatus::kFailed;
    end.result_json = R"({"results":[],"events":[]})";
    end.error_message = why.message();
    batch.finish_event = end;
    auto st = store_->ApplyMemoryChanges(std::move(batch));
    if (!st.ok()) {
      // Still PENDING in the store: without another run it would stay so until a restart.
      spdlog::error("memory event {}: could not record failure: {}", event.id,
                    st.status().ToString());
      return RetryLater(event, stripe);
    }
    spdlog::info("memory event {} failed ({})", event.id, ApiCodeOf(why.code()));
  };
  auto request = DecodeAddRequest(event.workspace, event.request_json);
  if (!request.ok()) return fail(request.status());
  stripe = EventStripe(*request);
  auto shard = Shard(event.workspace);
  if (!shard.ok()) {
    // The store cannot be read: try again later rather than fail the event.
    spdlog::error("memory event {}: shard load failed: {}", event.id, shard.status().ToString());
    return RetryLater(event, stripe);
  }
  // RUNNING is not written to the store: it would cost every event an extra fsync, and after a
  // crash a PENDING and a RUNNING event are resumed alike. GetEvent reports it from running_ids_.
  {
    MutexLock lock(&running_mu_);
    running_ids_.insert(event.id);
  }
  struct Done {
    MemoryService* self;
    const std::string& id;
    ~Done() {
      MutexLock lock(&self->running_mu_);
      self->running_ids_.erase(id);
    }
  } done{this, event.id};
  MutexLock scope(&ScopeLock(event.workspace, request->user_id, request->agent_id, request->run_id,
                             request->app_id));
  // On a shared store another node may change this workspace's memories while we plan: the
  // write then fails with kConflict (its version moved), and we plan again on the refreshed shard.
  const bool shared = store_->shared();
  constexpr int kMaxPlans = 8;
  Result<MemoryChangeBatch> batch = Status::Internal("not planned");
  Result<MemoryChangeOutcome> outcome = Status::Internal("not written");
  for (int attempt = 1;; ++attempt) {
    if (shared) {
      Status refreshed = (*shard)->Refresh(store_, event.workspace);
      if (!refreshed.ok()) {
        spdlog::error("memory event {}: shard refresh failed: {}", event.id, refreshed.ToString());
        return RetryLater(event, stripe);
      }
    }
    const int64_t planned_at = (*shard)->version();
    std::string result_json;
    batch = PlanEvent(event, *request, **shard, &result_json);
    if (!batch.ok()) return fail(batch.status());
    MemoryEventRecord end = event;
    end.status = JobStatus::kSucceeded;
    end.result_json = result_json;
    batch->finish_event = end;
    if (shared) batch->expected_version = planned_at;
    outcome = store_->ApplyMemoryChanges(*batch);
    if (shared && !outcome.ok() && outcome.status().code() == StatusCode::kConflict) {
      // Either the workspace moved (plan again) or another node took this event over after our
      // lease lapsed and finished it (its end stands).
      auto stored = store_->GetEvent(event.workspace, event.id);
      if (stored.ok() && IsFinished(stored->status)) {
        spdlog::warn("memory event {} was finished by another node meanwhile", event.id);
        return;
      }
    }
    if (shared && !outcome.ok() && outcome.status().code() == StatusCode::kConflict &&
        attempt < kMaxPlans) {
      spdlog::debug("memory event {}: workspace changed while planning; planning again", event.id);
      continue;
    }
    break;
  }
  if (!outcome.ok()) {
    spdlog::error("memory event {}: store write failed: {}", event.id, outcome.status().ToString());
    // The store cannot take writes now (disk full, I/O error, a dropped connection): the add was
    // acknowledged, so it waits and runs again instead of failing; it finishes once the fault
    // clears, without a restart.
    if (outcome.status().code() == StatusCode::kUnavailable) return RetryLater(event, stripe);
    return fail(outcome.status());
  }
  ApplyToShard(**shard, *batch, *outcome);
  const auto ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - started).count();
  spdlog::debug("memory event {} succeeded: {} change(s) in {:.1f} ms", event.id,
                batch->changes.size(), ms);
}

Result<MemoryChangeBatch> MemoryService::PlanEvent(const MemoryEventRecord& event,
                                                   const MemoryAddRequest& req, MemoryShard& shard,
                                                   std::string* result_json) {
  const int64_t now = clock_->WallMicros();
  std::vector<ConversationMessage> messages = req.messages;
  for (auto& m : messages) {
    if (m.time_us == 0) m.time_us = req.timestamp_us.value_or(event.created_at_us);
  }
  // 1. Facts: extracted, or the messages themselves; each with the messages it came from.
  std::vector<ExtractedFact> extracted_facts;
  // Verbatim memories keep their message's time and place in the request, so they are turns of
  // a conversation to the search (windows, neighbours, date prior).
  struct Said {
    int64_t time_us;
    int32_t position;
  };
  std::map<std::string, Said> said;  // by fact text (infer: false)
  if (req.infer) {
    auto extracted = req.custom_instructions.empty()
                         ? extractor_->ExtractFacts(messages)
                         : extractor_->ExtractFactsFollowing(messages, req.custom_instructions);
    if (!extracted.ok()) return extracted.status();
    extracted_facts = std::move(*extracted);
  } else {
    std::unordered_set<std::string> seen;
    for (size_t i = 0; i < messages.size(); ++i) {
      const auto& m = messages[i];
      // A named speaker's message keeps who said it ("Caroline: We adopted a puppy."), as a
      // Leaderboard turn does: in a conversation of several people, a message without its
      // speaker cannot answer "what did Caroline adopt?", to BM25 or to the model reading it.
      std::string said_text = m.name.empty() ? m.content : m.name + ": " + m.content;
      std::string text = Collapse(said_text);
      if (!text.empty() && seen.insert(text).second) {
        extracted_facts.push_back({said_text, {static_cast<int32_t>(i)}});
        said.try_emplace(std::move(said_text), Said{m.time_us, static_cast<int32_t>(i)});
      }
    }
  }
  const std::vector<std::string> facts = FactTexts(extracted_facts);
  ProvenanceOrigin origin{.source = req.infer ? "extraction" : "verbatim",
                          .event_id = event.id,
                          .extractor = req.infer ? extractor_->name() : std::string_view(),
                          .messages = &messages};
  auto provenance_of = [&](const MemoryDecision& d, const AgentMemory* replaced) {
    origin.sources.clear();
    if (d.fact >= 0 && static_cast<size_t>(d.fact) < extracted_facts.size()) {
      origin.sources = extracted_facts[d.fact].sources;
    }
    return EventProvenance(origin, replaced);
  };
  // When a fact was said: its message's time (infer: false), else the latest of the messages it
  // was extracted from (the date prior and a conversation's order use it, not when the add ran);
  // nullopt when no message of it has a time.
  auto said_at = [&](const MemoryDecision& d) -> std::optional<int64_t> {
    if (auto s = said.find(d.text); s != said.end()) return s->second.time_us;
    if (d.fact < 0 || static_cast<size_t>(d.fact) >= extracted_facts.size()) return std::nullopt;
    int64_t latest = 0;
    for (int32_t i : extracted_facts[d.fact].sources) {
      if (i >= 0 && static_cast<size_t>(i) < messages.size()) {
        latest = std::max(latest, messages[i].time_us);
      }
    }
    return latest > 0 ? std::optional<int64_t>(latest) : std::nullopt;
  };
  MemoryChangeBatch batch;
  batch.workspace = event.workspace;
  batch.event_id = event.id;
  json results = json::array();
  json events = json::array();
  if (facts.empty()) {
    *result_json = Dump({{"results", results}, {"events", events}});
    return batch;
  }

  // 2. Each fact's most similar memories of the same scope.
  std::vector<std::vector<float>> fact_vectors(facts.size());
  if (embedder_ != nullptr) {
    auto vectors = embedder_->EmbedBatch(facts);
    if (!vectors.ok()) return vectors.status();
    fact_vectors = std::move(*vectors);
  }
  MemoryFilter scope;
  if (!req.user_id.empty()) scope.AndEquals("user_id", req.user_id);
  if (!req.agent_id.empty()) scope.AndEquals("agent_id", req.agent_id);
  if (!req.run_id.empty()) scope.AndEquals("run_id", req.run_id);
  if (!req.app_id.empty()) scope.AndEquals("app_id", req.app_id);
  std::vector<FactCandidates> candidates;
  std::map<std::string, AgentMemory> known;  // every memory shown to the extractor
  for (size_t i = 0; i < facts.size(); ++i) {
    MemoryQuery q;
    q.terms = analyzer_->AnalyzeQuery(facts[i]);
    q.vector = fact_vectors[i];
    q.filter = &scope;
    q.k = options_.similar_per_fact;
    q.now_us = now;
    q.conversation_steps = false;  // similar memories, not the turns around them
    auto hits = shard.Search(q);
    if (!hits.ok()) return hits.status();
    FactCandidates fc{facts[i], {}};
    for (auto& h : *hits) {
      fc.similar.push_back({h.memory.id, h.memory.text, h.similarity});
      known.emplace(h.memory.id, h.memory);
    }
    candidates.push_back(std::move(fc));
  }

  // 3. Decisions.
  std::vector<MemoryDecision> decisions;
  if (req.infer) {
    auto decided = extractor_->Reconcile(candidates);
    if (!decided.ok()) return decided.status();
    decisions = std::move(*decided);
  } else {
    // Verbatim memories: only exact duplicates are recognised.
    for (size_t i = 0; i < candidates.size(); ++i) {
      const FactCandidates& fc = candidates[i];
      MemoryDecision d{MemoryAction::kAdd, "", fc.fact};
      for (const auto& s : fc.similar) {
        if (Collapse(s.text) == Collapse(fc.fact)) d = {MemoryAction::kNone, s.id, ""};
      }
      d.fact = static_cast<int32_t>(i);
      decisions.push_back(d);
    }
  }

  // 4. Changes. Texts that differ from the embedded facts (LLM rewrites) are embedded now.
  std::map<std::string, std::vector<float>> vector_of;  // text -> vector
  for (size_t i = 0; i < facts.size(); ++i) {
    if (!fact_vectors[i].empty()) vector_of.emplace(facts[i], fact_vectors[i]);
  }
  if (embedder_ != nullptr) {
    std::vector<std::string> missing;
    for (const auto& d : decisions) {
      if ((d.action == MemoryAction::kAdd || d.action == MemoryAction::kUpdate) &&
          !vector_of.count(d.text)) {
        missing.push_back(d.text);
      }
    }
    if (!missing.empty()) {
      auto vectors = embedder_->EmbedBatch(missing);
      if (!vectors.ok()) return vectors.status();
      for (size_t i = 0; i < missing.size(); ++i) vector_of[missing[i]] = (*vectors)[i];
    }
  }
  std::string session_id;
  {
    json meta = ReadJsonOrDiscarded(req.metadata_json, kStoredJsonLimits);
    if (meta.is_object() && meta.contains("session_id") && meta["session_id"].is_string()) {
      session_id = meta["session_id"].get<std::string>();
    }
  }
  std::set<std::string> touched;
  for (const MemoryDecision& d : decisions) {
    if (d.action != MemoryAction::kAdd) {
      auto it = known.find(d.memory_id);
      if (it == known.end()) {
        return Status::Unavailable(
            fmt::format("extractor {} referred to a memory it was not shown", extractor_->name()));
      }
      // One change per memory per event: a second decision on it adds nothing.
      if (!touched.insert(d.memory_id).second) continue;
      const AgentMemory& old = it->second;
      if (d.action == MemoryAction::kNone) {
        events.push_back({{"memory_id", old.id},
                          {"event", "NONE"},
                          {"memory", old.text},
                          {"previous_memory", nullptr}});
        continue;
      }
      MemoryChange c = ChangeOf(old, d.action == MemoryAction::kUpdate ? MemoryChange::Op::kUpdate
                                                                       : MemoryChange::Op::kDelete);
      if (d.action == MemoryAction::kUpdate) {
        c.record.text = d.text;
        c.record.updated_at_us = std::max(now, old.updated_at_us);
        json merged = ReadJsonOrDiscarded(old.metadata_json, kStoredJsonLimits);
        if (!merged.is_object()) merged = json::object();
        const json patch = ReadJsonOrDiscarded(req.metadata_json, kStoredJsonLimits);
        if (patch.is_object()) {
          for (const auto& [k, v] : patch.items()) merged[k] = v;
        }
        c.record.metadata_json = Dump(merged);
        c.record.provenance_json = provenance_of(d, &old);
        // The new version holds from when its messages were said (the old one's time stays
        // with the version it replaced).
        if (std::optional<int64_t> at = said_at(d)) c.record.source_ts_us = *at;
        if (auto v = vector_of.find(d.text); v != vector_of.end()) {
          c.record.vector = v->second;
          c.record.vector_model = embedder_->model_id();
        }
        events.push_back({{"memory_id", old.id},
                          {"event", "UPDATE"},
                          {"memory", d.text},
                          {"previous_memory", old.text}});
      } else {
        events.push_back({{"memory_id", old.id},
                          {"event", "DELETE"},
                          {"memory", old.text},
                          {"previous_memory", nullptr}});
      }
      results.push_back(old.id);
      batch.changes.push_back(std::move(c));
      continue;
    }
    MemoryChange c;
    c.op = MemoryChange::Op::kInsert;
    MemoryRecord& r = c.record;
    r.id = NewId("m");
    r.workspace = event.workspace;
    r.user_id = req.user_id;
    r.agent_id = req.agent_id;
    r.run_id = req.run_id;
    r.app_id = req.app_id;
    r.session_id = session_id;
    r.role = req.infer ? "" : std::string(kVerbatimRole);
    r.source_ts_us = said_at(d);
    if (auto s = said.find(d.text); s != said.end()) {
      r.position = s->second.position;
    } else if (d.fact >= 0 && static_cast<size_t>(d.fact) < extracted_facts.size() &&
               !extracted_facts[d.fact].sources.empty()) {
      r.position = extracted_facts[d.fact].sources.front();
    }
    r.text = d.text;
    r.metadata_json = req.metadata_json;
    r.provenance_json = provenance_of(d, nullptr);
    r.created_at_us = r.updated_at_us = now;
    r.expires_at_us = req.expires_at_us;
    if (auto v = vector_of.find(d.text); v != vector_of.end()) {
      r.vector = v->second;
      r.vector_model = embedder_->model_id();
    }
    events.push_back(
        {{"memory_id", r.id}, {"event", "ADD"}, {"memory", d.text}, {"previous_memory", nullptr}});
    results.push_back(r.id);
    batch.changes.push_back(std::move(c));
  }
  ENGRAM_RETURN_IF_ERROR(Categorize(req, &batch));
  *result_json = Dump({{"results", results}, {"events", events}});
  return batch;
}

Status MemoryService::Categorize(const MemoryAddRequest& req, MemoryChangeBatch* batch) const {
  if (embedder_ == nullptr) return Status::Ok();
  std::vector<MemoryRecord*> records;
  std::vector<std::vector<float>> vectors;
  for (MemoryChange& c : batch->changes) {
    if (c.op == MemoryChange::Op::kDelete || c.record.vector.empty()) continue;
    records.push_back(&c.record);
    vectors.push_back(c.record.vector);
  }
  if (records.empty()) return Status::Ok();
  auto assigned = categorizer_.Assign(
      vectors, req.custom_categories.empty() ? DefaultCategories() : req.custom_categories);
  if (!assigned.ok()) return assigned.status();
  for (size_t i = 0; i < records.size(); ++i) records[i]->categories = std::move((*assigned)[i]);
  return Status::Ok();
}

void MemoryService::RunBackfill(const std::string& workspace) {
  if (embedder_ == nullptr) return;
  // Only a resident shard: one the budget dropped since its load queued this job is not loaded
  // back for it (its next load queues a backfill of its own). Held from here on, so the shard
  // stays while its vectors are stored and applied.
  std::shared_ptr<MemoryShard> shard = ResidentShard(workspace);
  if (shard == nullptr) return;
  auto missing = shard->MissingVectors();
  if (missing.empty()) return;
  spdlog::info("memory vectors: re-embedding {} memories of workspace {}", missing.size(),
               workspace);
  for (size_t begin = 0; begin < missing.size(); begin += options_.backfill_batch) {
    if (jobs_.stopping()) return;
    const size_t end = std::min(missing.size(), begin + options_.backfill_batch);
    std::vector<std::string> texts;
    for (size_t i = begin; i < end; ++i) texts.push_back(missing[i].second);
    auto vectors = embedder_->EmbedBatch(texts);
    if (!vectors.ok()) {
      spdlog::warn("memory vectors: re-embedding stopped: {}", vectors.status().ToString());
      return;
    }
    std::vector<VectorUpdate> updates;
    for (size_t i = begin; i < end; ++i) {
      updates.push_back(
          {missing[i].first, embedder_->model_id(), std::move((*vectors)[i - begin])});
    }
    if (Status st = store_->PutVectors(updates); !st.ok()) {
      spdlog::warn("memory vectors: storing re-embedded vectors failed: {}", st.ToString());
      return;
    }
    shard->ApplyVectors(updates);
  }
}

void MemoryService::PurgeExpired() {
  // Resident shards only (a dropped one is purged after its next load); held until purged.
  std::vector<std::pair<std::string, std::shared_ptr<MemoryShard>>> shards;
  shards_.ForEach([&](const std::string& ws, const std::shared_ptr<MemoryShard>& shard) {
    if (shard->loaded()) shards.emplace_back(ws, shard);
  });
  const int64_t now = clock_->WallMicros();
  for (const auto& [workspace, shard] : shards) {
    std::vector<AgentMemory> expired = shard->Expired(now);
    if (expired.empty()) continue;
    MemoryChangeBatch batch;
    batch.workspace = workspace;
    for (const AgentMemory& m : expired) {
      batch.changes.push_back(ChangeOf(m, MemoryChange::Op::kDelete));
    }
    auto outcome = store_->ApplyMemoryChanges(batch);
    if (!outcome.ok()) {
      spdlog::warn("memory purge: {}", outcome.status().ToString());
      continue;
    }
    ApplyToShard(*shard, batch, *outcome);
    spdlog::info("memory purge: deleted {} expired memories of workspace {}", expired.size(),
                 workspace);
  }
}

}  // namespace engram
