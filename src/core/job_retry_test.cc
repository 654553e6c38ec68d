// Asynchronous jobs whose store call fails for a moment (memory events, skill tasks,
// knowledge-base documents) over a real SQLite store behind a store that fails on demand: each
// job runs again after a pause and finishes, instead of staying pending until a restart, and a
// retried job still runs before the later jobs of its scope.
#include <gtest/gtest.h>
#include <stdlib.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <thread>

#include "core/kb_service.h"
#include "core/memory_service.h"
#include "core/skill_service.h"
#include "extract/rule_based_extractor.h"
#include "extract/skill_extractor.h"
#include "forwarding_store.h"
#include "store/sqlite_store.h"

namespace engram {
namespace {

using namespace std::chrono_literals;

// Fails the next N calls of a few reads and writes with kUnavailable, as a dropped database
// connection does.
class FlakyStore final : public testing::ForwardingStore {
 public:
  using ForwardingStore::ForwardingStore;

  std::atomic<int> fail_memory_loads{0};
  std::atomic<int> fail_skill_loads{0};
  std::atomic<int> fail_kb_finishes{0};
  std::atomic<int> fail_memory_writes{0};  // an event's changes (and its end) cannot be written

  Result<std::vector<MemoryRecord>> LoadAgentMemories(std::string_view workspace) override {
    if (Take(fail_memory_loads)) return Unavailable();
    return base_->LoadAgentMemories(workspace);
  }
  Result<MemoryChangeOutcome> ApplyMemoryChanges(MemoryChangeBatch batch) override {
    if (Take(fail_memory_writes)) return Unavailable();
    return base_->ApplyMemoryChanges(std::move(batch));
  }
  Result<std::vector<SkillRecord>> LoadSkills(std::string_view workspace) override {
    if (Take(fail_skill_loads)) return Unavailable();
    return base_->LoadSkills(workspace);
  }
  Result<bool> FinishKbDoc(const KbDocRecord& doc,
                           const std::vector<KbChunkRecord>& chunks) override {
    if (Take(fail_kb_finishes)) return Unavailable();
    return base_->FinishKbDoc(doc, chunks);
  }

 private:
  static bool Take(std::atomic<int>& left) {
    int n = left.load();
    while (n > 0) {
      if (left.compare_exchange_weak(n, n - 1)) return true;
    }
    return false;
  }
  static Status Unavailable() { return Status::Unavailable("database unavailable (test)"); }
};

class JobRetryTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/job_retry_test.XXXXXX";
    dir_ = mkdtemp(tmpl);
    std::filesystem::create_directories(dir_ + "/import");
    auto s = SqliteStore::Open({.path = dir_ + "/engram.db"});
    ASSERT_TRUE(s.ok()) << s.status().ToString();
    sqlite_ = std::move(*s);
    store_ = std::make_unique<FlakyStore>(sqlite_.get());
  }
  void TearDown() override {
    store_.reset();
    sqlite_.reset();
    std::filesystem::remove_all(dir_);
  }

  // Polls `status` (at most 30 s: the pauses add up on a loaded machine) until the job has
  // finished; returns the last status seen.
  template <typename F>
  static JobStatus WaitForEnd(F status) {
    JobStatus last = JobStatus::kPending;
    const auto deadline = std::chrono::steady_clock::now() + 30s;
    while (std::chrono::steady_clock::now() < deadline) {
      last = status();
      if (IsFinished(last)) return last;
      std::this_thread::sleep_for(10ms);
    }
    return last;
  }

  std::string dir_;
  Analyzer analyzer_;
  RuleBasedExtractor extractor_;
  BuiltinSkillExtractor skill_extractor_;
  std::unique_ptr<SqliteStore> sqlite_;
  std::unique_ptr<FlakyStore> store_;
};

// One suite per service, so that each runs with that service's tests.
class MemoryServiceRetryTest : public JobRetryTest {};
class SkillServiceRetryTest : public JobRetryTest {};
class KbServiceRetryTest : public JobRetryTest {};

MemoryAddRequest Verbatim(const std::string& text) {
  MemoryAddRequest r;
  r.workspace = "w";
  r.user_id = "alice";
  r.infer = false;
  r.messages.push_back({"user", text, 0});
  return r;
}

// The memory actions an event's result lists ("ADD", "NONE", ...).
std::vector<std::string> Actions(const MemoryEventRecord& e) {
  std::vector<std::string> out;
  auto j = nlohmann::json::parse(e.result_json, nullptr, false);
  if (!j.is_object() || !j.contains("events")) return out;
  for (const auto& ev : j["events"]) out.push_back(ev.value("event", ""));
  return out;
}

// An acknowledged event whose changes cannot be written (a full disk, a dropped connection)
// waits and runs again; it succeeds once the store takes writes, instead of ending FAILED.
TEST_F(MemoryServiceRetryTest, AnEventWhoseWriteFailsRunsAgainInsteadOfFailing) {
  store_->fail_memory_writes = 3;
  MemoryService service(store_.get(), &analyzer_, nullptr, &extractor_,
                        {.event_workers = 1, .job_poll_interval = 100ms});
  ASSERT_TRUE(service.Start().ok());
  auto id = service.Add(Verbatim("alice waters the roof garden at dawn"));
  ASSERT_TRUE(id.ok()) << id.status().ToString();
  EXPECT_EQ(WaitForEnd([&] { return service.GetEvent("w", *id)->status; }), JobStatus::kSucceeded);
  EXPECT_EQ(store_->fail_memory_writes.load(), 0);
  EXPECT_EQ(Actions(*service.GetEvent("w", *id)), std::vector<std::string>{"ADD"});
}

// Two events of one scope; the first cannot read its workspace twice. It runs again after the
// pause and still before the second, which therefore finds its memory already there.
TEST_F(MemoryServiceRetryTest, AnEventRunsAgainAndKeepsItsScopeOrder) {
  store_->fail_memory_loads = 2;
  MemoryService service(store_.get(), &analyzer_, nullptr, &extractor_,
                        {.event_workers = 2, .job_poll_interval = 100ms});
  ASSERT_TRUE(service.Start().ok());
  auto first = service.Add(Verbatim("alice keeps bees on the roof"));
  ASSERT_TRUE(first.ok()) << first.status().ToString();
  auto second = service.Add(Verbatim("alice keeps bees on the roof"));
  ASSERT_TRUE(second.ok()) << second.status().ToString();
  for (const std::string& id : {*first, *second}) {
    EXPECT_EQ(WaitForEnd([&] { return service.GetEvent("w", id)->status; }), JobStatus::kSucceeded)
        << id;
  }
  EXPECT_EQ(store_->fail_memory_loads.load(), 0);
  EXPECT_EQ(Actions(*service.GetEvent("w", *first)), std::vector<std::string>{"ADD"});
  EXPECT_EQ(Actions(*service.GetEvent("w", *second)), std::vector<std::string>{"NONE"});
  EXPECT_EQ(service.queued_events(), 0u);
}

SkillAddRequest HowTo(const std::string& last_step) {
  return {"w",
          {{"user", "How do I rotate the API keys?", 0},
           {"assistant", "1. Open the console.\n2. Create a new key.\n3. " + last_step, 0}},
          "u",
          ""};
}

// Two tasks of one owner writing the same skill; the first cannot read the skills twice. Both
// complete, in order: the second one's content is the skill's latest version.
TEST_F(SkillServiceRetryTest, ATaskRunsAgainAndKeepsItsOwnersOrder) {
  store_->fail_skill_loads = 2;
  SkillService service(store_.get(), &analyzer_, nullptr, &skill_extractor_,
                       {.task_workers = 2, .job_poll_interval = 100ms});
  ASSERT_TRUE(service.Start().ok());
  auto first = service.Add(HowTo("Delete the old key."));
  ASSERT_TRUE(first.ok()) << first.status().ToString();
  auto second = service.Add(HowTo("Revoke the old key after a day."));
  ASSERT_TRUE(second.ok()) << second.status().ToString();
  for (const std::string& id : {*first, *second}) {
    EXPECT_EQ(WaitForEnd([&] { return service.GetTask("w", id)->status; }), JobStatus::kSucceeded)
        << id;
  }
  EXPECT_EQ(store_->fail_skill_loads.load(), 0);
  auto task = service.GetTask("w", *second);
  ASSERT_TRUE(task.ok());
  ASSERT_EQ(task->skill_ids.size(), 1u);
  auto skill = service.Get("w", task->skill_ids[0], "u");
  ASSERT_TRUE(skill.ok()) << skill.status().ToString();
  EXPECT_EQ(skill->version, "1.0.1");
  EXPECT_NE(skill->files["SKILL.md"].find("Revoke the old key"), std::string::npos);
  EXPECT_EQ(service.queued_tasks(), 0u);
}

// A document whose end cannot be committed twice is ingested again and ends SUCCESS, its chunks
// searchable.
TEST_F(KbServiceRetryTest, ADocumentWhoseEndWasNotStoredIsIngestedAgain) {
  store_->fail_kb_finishes = 2;
  std::ofstream(dir_ + "/import/logbook.txt")
      << "The lighthouse keeper logbook lists every passing ship.\n";
  DocFetcher fetcher({.import_dir = dir_ + "/import"});
  KbService service(store_.get(), &analyzer_, nullptr, &fetcher, {.job_poll_interval = 100ms});
  ASSERT_TRUE(service.Start().ok());
  auto id = service.Upload({.workspace = "w",
                            .kb_id = "kb",
                            .type = DocSourceType::kLocal,
                            .id = "d1",
                            .title = "Logbook",
                            .file_url = "logbook.txt"});
  ASSERT_TRUE(id.ok()) << id.status().ToString();
  EXPECT_EQ(WaitForEnd([&] { return service.Get("w", "kb", "d1")->status; }),
            JobStatus::kSucceeded);
  EXPECT_EQ(store_->fail_kb_finishes.load(), 0);
  auto hits = service.Search("w", "kb", "lighthouse logbook", 5);
  ASSERT_TRUE(hits.ok()) << hits.status().ToString();
  ASSERT_EQ(hits->size(), 1u);
  EXPECT_EQ((*hits)[0].doc_id, "d1");
}

// A stop does not wait for a job's pause: the pending retry is dropped and the row stays
// unfinished in the store, for the next start.
TEST_F(KbServiceRetryTest, AStopDoesNotWaitForAPendingRetry) {
  store_->fail_kb_finishes = 1;
  std::ofstream(dir_ + "/import/logbook.txt") << "The lighthouse keeper logbook.\n";
  DocFetcher fetcher({.import_dir = dir_ + "/import"});
  auto service = std::make_unique<KbService>(store_.get(), &analyzer_, nullptr, &fetcher,
                                             KbServiceOptions{.job_poll_interval = 60s});
  ASSERT_TRUE(service->Start().ok());
  ASSERT_TRUE(service
                  ->Upload({.workspace = "w",
                            .kb_id = "kb",
                            .type = DocSourceType::kLocal,
                            .id = "d1",
                            .title = "Logbook",
                            .file_url = "logbook.txt"})
                  .ok());
  const auto deadline = std::chrono::steady_clock::now() + 30s;
  while (store_->fail_kb_finishes.load() > 0 && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(5ms);
  }
  ASSERT_EQ(store_->fail_kb_finishes.load(), 0) << "the document was never finished";
  // The job is ending or its retry is waiting out its pause (a second).
  EXPECT_GE(service->queued_jobs(), 1u);
  const auto stop = std::chrono::steady_clock::now();
  service->Shutdown();
  EXPECT_LT(std::chrono::steady_clock::now() - stop, 500ms);
  auto doc = sqlite_->GetKbDoc("w", "kb", "d1");
  ASSERT_TRUE(doc.ok());
  EXPECT_EQ(doc->status, JobStatus::kPending);
  service.reset();
  // The next start ingests it.
  KbService again(store_.get(), &analyzer_, nullptr, &fetcher, {});
  ASSERT_TRUE(again.Start().ok());
  EXPECT_EQ(WaitForEnd([&] { return again.Get("w", "kb", "d1")->status; }), JobStatus::kSucceeded);
}

}  // namespace
}  // namespace engram
