// ForwardingStore: a Store that passes every call to another store. Tests derive from it and
// override the calls they want to fail or observe (fault injection), e.g.
//
//   class FlakyStore : public engram::testing::ForwardingStore {
//     using ForwardingStore::ForwardingStore;
//     Result<std::vector<SkillRecord>> LoadSkills(std::string_view ws) override { ... }
//   };
//
// Thread-safety: as the store it forwards to. Does not own it; it must outlive this one.
#pragma once

#include <functional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "store/store.h"

namespace engram::testing {

class ForwardingStore : public Store {
 public:
  explicit ForwardingStore(Store* base) : base_(base) {}

  Result<AddOutcome> Add(AddBatch batch) override { return base_->Add(std::move(batch)); }
  Result<std::vector<MemoryRecord>> LoadScope(std::string_view workspace,
                                              std::string_view user_id) override {
    return base_->LoadScope(workspace, user_id);
  }
  Status PutVectors(const std::vector<VectorUpdate>& updates) override {
    return base_->PutVectors(updates);
  }

  Result<std::vector<MemoryRecord>> LoadAgentMemories(std::string_view workspace) override {
    return base_->LoadAgentMemories(workspace);
  }
  Result<MemoryChangeOutcome> ApplyMemoryChanges(MemoryChangeBatch batch) override {
    return base_->ApplyMemoryChanges(std::move(batch));
  }
  Result<std::vector<HistoryRecord>> GetHistory(std::string_view workspace,
                                                std::string_view memory_id) override {
    return base_->GetHistory(workspace, memory_id);
  }
  Result<std::vector<HistoryRecord>> LoadReplacedHistory(std::string_view workspace) override {
    return base_->LoadReplacedHistory(workspace);
  }
  Status InsertEvent(const MemoryEventRecord& event) override { return base_->InsertEvent(event); }
  void AcceptEvent(MemoryEventRecord event, std::function<void(Status)> done) override {
    base_->AcceptEvent(std::move(event), std::move(done));
  }
  Status UpdateEventStatus(std::string_view id, JobStatus status,
                           std::string_view error_message) override {
    return base_->UpdateEventStatus(id, status, error_message);
  }
  Result<MemoryEventRecord> GetEvent(std::string_view workspace, std::string_view id) override {
    return base_->GetEvent(workspace, id);
  }
  Result<std::vector<MemoryEventRecord>> UnfinishedEvents() override {
    return base_->UnfinishedEvents();
  }
  Result<std::vector<MemoryEventRecord>> ListEvents(std::string_view workspace, size_t offset,
                                                    size_t limit, size_t* total) override {
    return base_->ListEvents(workspace, offset, limit, total);
  }
  Status InsertFeedback(std::string_view workspace, const MemoryFeedbackRecord& feedback) override {
    return base_->InsertFeedback(workspace, feedback);
  }
  Result<std::vector<MemoryFeedbackRecord>> GetFeedback(std::string_view workspace,
                                                        std::string_view memory_id) override {
    return base_->GetFeedback(workspace, memory_id);
  }

  Result<std::vector<SkillRecord>> LoadSkills(std::string_view workspace) override {
    return base_->LoadSkills(workspace);
  }
  Result<SkillRecord> GetSkill(std::string_view workspace, std::string_view id) override {
    return base_->GetSkill(workspace, id);
  }
  Result<std::vector<SkillVersionRecord>> GetSkillVersions(std::string_view workspace,
                                                           std::string_view id) override {
    return base_->GetSkillVersions(workspace, id);
  }
  Status ApplySkillChanges(SkillChangeBatch batch) override {
    return base_->ApplySkillChanges(std::move(batch));
  }
  Status InsertSkillTask(const SkillTaskRecord& task) override {
    return base_->InsertSkillTask(task);
  }
  Result<SkillTaskRecord> GetSkillTask(std::string_view workspace, std::string_view id) override {
    return base_->GetSkillTask(workspace, id);
  }
  Result<std::vector<SkillTaskRecord>> ListSkillTasks(std::string_view workspace, size_t offset,
                                                      size_t limit, size_t* total) override {
    return base_->ListSkillTasks(workspace, offset, limit, total);
  }
  Result<std::vector<SkillTaskRecord>> UnfinishedSkillTasks() override {
    return base_->UnfinishedSkillTasks();
  }

  Status PutKbDoc(const KbDocRecord& doc) override { return base_->PutKbDoc(doc); }
  Result<std::string> GetKbUpload(std::string_view workspace, std::string_view kb_id,
                                  std::string_view id, std::string_view job_id) override {
    return base_->GetKbUpload(workspace, kb_id, id, job_id);
  }
  Result<bool> FinishKbDoc(const KbDocRecord& doc,
                           const std::vector<KbChunkRecord>& chunks) override {
    return base_->FinishKbDoc(doc, chunks);
  }
  Result<KbDocRecord> GetKbDoc(std::string_view workspace, std::string_view kb_id,
                               std::string_view id) override {
    return base_->GetKbDoc(workspace, kb_id, id);
  }
  Result<std::vector<KbDocRecord>> ListKbDocs(std::string_view workspace, std::string_view kb_id,
                                              size_t offset, size_t limit, size_t* total) override {
    return base_->ListKbDocs(workspace, kb_id, offset, limit, total);
  }
  Result<std::vector<KnowledgeBaseSummary>> ListKnowledgeBases(std::string_view workspace,
                                                               size_t offset, size_t limit,
                                                               size_t* total) override {
    return base_->ListKnowledgeBases(workspace, offset, limit, total);
  }
  Result<bool> DeleteKbDoc(std::string_view workspace, std::string_view kb_id,
                           std::string_view id) override {
    return base_->DeleteKbDoc(workspace, kb_id, id);
  }
  Result<std::vector<KbChunkRecord>> LoadKbChunks(std::string_view workspace,
                                                  std::string_view kb_id) override {
    return base_->LoadKbChunks(workspace, kb_id);
  }
  Result<std::vector<KbDocRecord>> UnfinishedKbDocs() override { return base_->UnfinishedKbDocs(); }

  bool shared() const override { return base_->shared(); }
  Result<int64_t> ScopeVersion(const std::string& scope_key) override {
    return base_->ScopeVersion(scope_key);
  }
  Result<ScopeDelta> LoadScopeSince(std::string_view workspace, std::string_view user_id,
                                    int64_t since) override {
    return base_->LoadScopeSince(workspace, user_id, since);
  }
  Result<ScopeDelta> LoadAgentMemoriesSince(std::string_view workspace, int64_t since) override {
    return base_->LoadAgentMemoriesSince(workspace, since);
  }
  int AddChangeListener(std::function<void(const std::string& scope_key)> fn) override {
    return base_->AddChangeListener(std::move(fn));
  }
  void RemoveChangeListener(int id) override { base_->RemoveChangeListener(id); }

  Result<std::optional<IdempotencyRecord>> FindIdempotency(std::string_view user_id,
                                                           std::string_view key) override {
    return base_->FindIdempotency(user_id, key);
  }
  Result<std::vector<ImageBlob>> GetImages(const std::vector<std::string>& sha256s) override {
    return base_->GetImages(sha256s);
  }
  Status CheckWritable() override { return base_->CheckWritable(); }
  Result<StoredScopes> ListStoredScopes() override { return base_->ListStoredScopes(); }
  Result<bool> ImportAgentMemory(const AgentMemoryImport& item) override {
    return base_->ImportAgentMemory(item);
  }
  Result<bool> ImportSkill(const SkillRecord& skill,
                           const std::vector<SkillVersionRecord>& versions) override {
    return base_->ImportSkill(skill, versions);
  }

  Result<std::vector<WorkspaceCounts>> CountWorkspaces() override {
    return base_->CountWorkspaces();
  }
  Stats GetStats() override { return base_->GetStats(); }

  Result<UserDeletion> DeleteLeaderboardUser(std::string_view workspace,
                                             std::string_view user_id) override {
    return base_->DeleteLeaderboardUser(workspace, user_id);
  }
  Result<std::vector<std::string>> LeaderboardUsersIdleSince(std::string_view workspace,
                                                             int64_t before_us,
                                                             size_t limit) override {
    return base_->LeaderboardUsersIdleSince(workspace, before_us, limit);
  }
  Result<int64_t> ExpireIdempotency(int64_t before_s) override {
    return base_->ExpireIdempotency(before_s);
  }

 protected:
  Store* base_;
};

}  // namespace engram::testing
