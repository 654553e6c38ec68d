// MemoryService over a real SQLite store, the rule-based extractor and the categorizer: entities,
// the event list, feedback, categories assigned by events and updates, and the stored request.
#include "core/memory_service.h"

#include <gtest/gtest.h>
#include <stdlib.h>

#include <cctype>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <thread>

#include "common/time_util.h"
#include "core/memory_provenance.h"
#include "extract/rule_based_extractor.h"
#include "store/sqlite_store.h"

namespace engram {
namespace {

// Embeds a text as the normalised counts of a few keywords (whole words, any case), or along an
// "other" axis when it has none: cosines are then known in advance, which a sentence model's are
// not.
class KeywordEmbedder final : public Embedder {
 public:
  static constexpr const char* kWords[] = {"tea", "coffee", "dog", "cat", "music"};

  const std::string& model_id() const override { return id_; }
  int dimension() const override { return static_cast<int>(std::size(kWords)) + 1; }
  Result<std::vector<std::vector<float>>> EmbedBatch(
      const std::vector<std::string>& texts) const override {
    std::vector<std::vector<float>> out;
    for (const std::string& text : texts) {
      std::vector<float> v(static_cast<size_t>(dimension()), 0.0f);
      std::string word;
      auto flush = [&] {
        for (size_t i = 0; i < std::size(kWords); ++i) {
          if (word == kWords[i]) v[i] += 1;
        }
        word.clear();
      };
      for (char c : text) {
        if (std::isalnum(static_cast<unsigned char>(c))) {
          word += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
        } else {
          flush();
        }
      }
      flush();
      float norm = 0;
      for (float x : v) norm += x * x;
      if (norm == 0) {
        v.back() = 1;
      } else {
        for (float& x : v) x /= std::sqrt(norm);
      }
      out.push_back(std::move(v));
    }
    return out;
  }

 private:
  std::string id_ = "keywords";
};

class MemoryServiceTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/memory_service_test.XXXXXX";
    dir_ = mkdtemp(tmpl);
    auto s = SqliteStore::Open({.path = dir_ + "/engram.db"});
    ASSERT_TRUE(s.ok()) << s.status().ToString();
    store_ = std::move(*s);
  }
  void TearDown() override {
    service_.reset();
    store_.reset();
    std::filesystem::remove_all(dir_);
  }
  void StartService(const Embedder* embedder) {
    service_ = std::make_unique<MemoryService>(store_.get(), &analyzer_, embedder, &extractor_,
                                               MemoryServiceOptions{});
    ASSERT_TRUE(service_->Start().ok());
  }
  static MemoryAddRequest Verbatim(std::vector<std::string> texts) {
    MemoryAddRequest r;
    r.workspace = "w";
    r.user_id = "alice";
    r.infer = false;
    for (auto& t : texts) r.messages.push_back({"user", std::move(t), 0});
    return r;
  }
  MemoryEventRecord AddAndWait(const MemoryAddRequest& request) {
    auto id = service_->Add(request);
    EXPECT_TRUE(id.ok()) << id.status().ToString();
    if (!id.ok()) return {};
    for (int i = 0; i < 500; ++i) {
      auto e = service_->GetEvent(request.workspace, *id);
      EXPECT_TRUE(e.ok());
      if (IsFinished(e->status)) return *e;
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    ADD_FAILURE() << "event did not finish";
    return {};
  }
  std::vector<AgentMemory> All(const MemoryFilter& filter) {
    size_t total = 0;
    auto list = service_->List("w", filter, 1, 100, &total);
    EXPECT_TRUE(list.ok()) << list.status().ToString();
    return list.ok() ? *list : std::vector<AgentMemory>{};
  }
  static MemoryFilter Filter(std::string_view json) {
    auto f = MemoryFilter::Parse(nlohmann::json::parse(json), "filters", {});
    EXPECT_TRUE(f.ok()) << f.status().ToString();
    return f.ok() ? std::move(*f) : MemoryFilter();
  }

  std::string dir_;
  Analyzer analyzer_;
  RuleBasedExtractor extractor_;
  std::unique_ptr<SqliteStore> store_;
  std::unique_ptr<MemoryService> service_;
};

TEST_F(MemoryServiceTest, EntitiesCountVisibleMemoriesPerScopeId) {
  StartService(nullptr);
  MemoryAddRequest a = Verbatim({"likes green tea", "owns a bicycle"});
  a.app_id = "shop";
  ASSERT_EQ(AddAndWait(a).status, JobStatus::kSucceeded);
  MemoryAddRequest b = Verbatim({"plays chess"});
  b.user_id = "";
  b.agent_id = "coach";
  b.run_id = "r1";
  ASSERT_EQ(AddAndWait(b).status, JobStatus::kSucceeded);
  MemoryAddRequest gone = Verbatim({"was here briefly"});
  gone.user_id = "bob";
  gone.expires_at_us = 1;  // already expired: invisible
  ASSERT_EQ(AddAndWait(gone).status, JobStatus::kSucceeded);

  auto entities = service_->Entities("w");
  ASSERT_TRUE(entities.ok()) << entities.status().ToString();
  std::map<std::string, MemoryEntity> by;
  for (const auto& e : *entities) by[e.type + ":" + e.name] = e;
  ASSERT_EQ(by.size(), 4u);
  EXPECT_EQ(by["user:alice"].total_memories, 2u);
  EXPECT_EQ(by["app:shop"].total_memories, 2u);
  EXPECT_EQ(by["agent:coach"].total_memories, 1u);
  EXPECT_EQ(by["run:r1"].total_memories, 1u);
  EXPECT_GT(by["user:alice"].created_at_us, 0);
  EXPECT_GE(by["user:alice"].updated_at_us, by["user:alice"].created_at_us);
  // Most recently updated first.
  for (size_t i = 1; i < entities->size(); ++i) {
    EXPECT_GE((*entities)[i - 1].updated_at_us, (*entities)[i].updated_at_us);
  }
  // An app id confines a search and a delete on its own.
  MemoryFilter app;
  app.AndEquals("app_id", "shop");
  auto hits = service_->Search({.workspace = "w", .query = "tea", .filter = std::move(app)});
  ASSERT_TRUE(hits.ok()) << hits.status().ToString();
  ASSERT_EQ(hits->size(), 1u);
  EXPECT_EQ((*hits)[0].memory.app_id, "shop");
  MemoryFilter shop;
  shop.AndEquals("app_id", "shop");
  EXPECT_EQ(service_->DeleteAll("w", shop).value(), 2u);
  EXPECT_EQ(service_->Entities("w")->size(), 2u);  // the agent and the run
  EXPECT_TRUE(service_->Entities("empty")->empty());
}

TEST_F(MemoryServiceTest, ListEventsPagesNewestFirst) {
  StartService(nullptr);
  std::vector<std::string> ids;
  for (int i = 0; i < 3; ++i) {
    MemoryEventRecord e = AddAndWait(Verbatim({"fact number " + std::to_string(i)}));
    ASSERT_EQ(e.status, JobStatus::kSucceeded);
    ids.push_back(e.id);
  }
  size_t total = 0;
  auto page = service_->ListEvents("w", 1, 2, &total);
  ASSERT_TRUE(page.ok()) << page.status().ToString();
  EXPECT_EQ(total, 3u);
  ASSERT_EQ(page->size(), 2u);
  EXPECT_EQ((*page)[0].id, ids[2]);
  EXPECT_EQ((*page)[1].id, ids[1]);
  EXPECT_NE((*page)[0].result_json.find("\"ADD\""), std::string::npos);
  page = service_->ListEvents("w", 2, 2, &total);
  ASSERT_TRUE(page.ok());
  ASSERT_EQ(page->size(), 1u);
  EXPECT_EQ((*page)[0].id, ids[0]);
  EXPECT_TRUE(service_->ListEvents("w", 3, 2, &total)->empty());
}

TEST_F(MemoryServiceTest, FeedbackIsValidatedAndStored) {
  StartService(nullptr);
  ASSERT_EQ(AddAndWait(Verbatim({"likes green tea"})).status, JobStatus::kSucceeded);
  const std::string id = All(Filter(R"({"user_id": "alice"})")).at(0).id;

  auto fb = service_->RecordFeedback("w", id, "VERY_NEGATIVE", "wrong person");
  ASSERT_TRUE(fb.ok()) << fb.status().ToString();
  EXPECT_EQ(fb->memory_id, id);
  EXPECT_EQ(fb->feedback, "VERY_NEGATIVE");
  EXPECT_EQ(fb->reason, "wrong person");
  EXPECT_TRUE(fb->id.starts_with("mf-")) << fb->id;
  EXPECT_TRUE(service_->RecordFeedback("w", id, "", "").ok());
  EXPECT_TRUE(service_->RecordFeedback("w", id, "POSITIVE", "").ok());

  auto bad = service_->RecordFeedback("w", id, "positive", "");
  EXPECT_EQ(bad.status().code(), StatusCode::kInvalidParameter);
  EXPECT_NE(bad.status().message().find("feedback"), std::string::npos);
  EXPECT_EQ(service_->RecordFeedback("w", "m-unknown", "POSITIVE", "").status().code(),
            StatusCode::kNotFound);
  EXPECT_EQ(service_->RecordFeedback("other", id, "POSITIVE", "").status().code(),
            StatusCode::kNotFound);

  auto stored = store_->GetFeedback("w", id);
  ASSERT_TRUE(stored.ok());
  ASSERT_EQ(stored->size(), 3u);  // the refused ones wrote nothing
  EXPECT_EQ((*stored)[0].id, fb->id);
  EXPECT_EQ((*stored)[0].reason, "wrong person");
}

TEST_F(MemoryServiceTest, EventsTagMemoriesWithTheAddsCustomCategories) {
  KeywordEmbedder embedder;
  StartService(&embedder);
  MemoryAddRequest add =
      Verbatim({"I drink tea every morning", "My dog is called Rex", "I live in Oslo"});
  add.custom_categories = {{"drinks", "tea or coffee"}, {"pets", "a dog or a cat"}};
  MemoryEventRecord event = AddAndWait(add);
  ASSERT_EQ(event.status, JobStatus::kSucceeded) << event.error_message;

  // The stored request carries the categories (a restart runs the event the same way).
  auto decoded = DecodeAddRequest("w", store_->GetEvent("w", event.id)->request_json);
  ASSERT_TRUE(decoded.ok());
  EXPECT_EQ(decoded->custom_categories, add.custom_categories);

  std::map<std::string, std::vector<std::string>> categories;
  for (const AgentMemory& m : All(Filter(R"({"user_id": "alice"})"))) {
    categories[m.text] = m.categories;
  }
  EXPECT_EQ(categories["I drink tea every morning"], std::vector<std::string>{"drinks"});
  EXPECT_EQ(categories["My dog is called Rex"], std::vector<std::string>{"pets"});
  EXPECT_TRUE(categories["I live in Oslo"].empty());  // nothing close, and no "misc" in the set

  auto pets = All(Filter(R"({"user_id": "alice", "categories": {"in": ["pets", "cars"]}})"));
  ASSERT_EQ(pets.size(), 1u);
  EXPECT_EQ(pets[0].text, "My dog is called Rex");
  // The categories survive a reload from the store.
  service_.reset();
  StartService(&embedder);
  auto drinks = All(Filter(R"({"user_id": "alice", "categories": "drinks"})"));
  ASSERT_EQ(drinks.size(), 1u);

  // A direct text update assigns them again, from the default set.
  auto updated = service_->Update({.workspace = "w", .id = drinks[0].id, .text = "I love music"});
  ASSERT_TRUE(updated.ok()) << updated.status().ToString();
  EXPECT_EQ(updated->categories, std::vector<std::string>{"music"});
  EXPECT_EQ(service_->Get("w", drinks[0].id)->categories, std::vector<std::string>{"music"});

  // Without an add's own set, the defaults apply.
  ASSERT_EQ(AddAndWait(Verbatim({"Coffee is fine"})).status, JobStatus::kSucceeded);
  auto coffee = All(Filter(R"({"user_id": "alice", "keywords": {"contains": "Coffee"}})"));
  ASSERT_EQ(coffee.size(), 1u);
  EXPECT_EQ(coffee[0].categories, std::vector<std::string>{"misc"});  // no default names coffee
}

TEST_F(MemoryServiceTest, NoEmbedderNoCategories) {
  StartService(nullptr);
  MemoryAddRequest add = Verbatim({"I drink tea every morning"});
  add.custom_categories = {{"drinks", "tea or coffee"}};
  ASSERT_EQ(AddAndWait(add).status, JobStatus::kSucceeded);
  auto all = All(Filter(R"({"user_id": "alice"})"));
  ASSERT_EQ(all.size(), 1u);
  EXPECT_TRUE(all[0].categories.empty());
}

TEST_F(MemoryServiceTest, RefusedAddsStoreNothing) {
  StartService(nullptr);
  MemoryAddRequest instructed = Verbatim({"likes tea"});
  instructed.infer = true;
  instructed.custom_instructions = "Only remember drinks.";
  auto refused = service_->Add(instructed);
  EXPECT_EQ(refused.status().code(), StatusCode::kInvalidParameter);
  EXPECT_NE(refused.status().message().find("custom_instructions"), std::string::npos);
  MemoryAddRequest repeated = Verbatim({"likes tea"});
  repeated.custom_categories = {{"drinks", "tea"}, {"drinks", "coffee"}};
  refused = service_->Add(repeated);
  EXPECT_EQ(refused.status().code(), StatusCode::kInvalidParameter);
  EXPECT_NE(refused.status().message().find("custom_categories"), std::string::npos);
  size_t total = 1;
  EXPECT_TRUE(service_->ListEvents("w", 1, 10, &total)->empty());
  EXPECT_EQ(total, 0u);
}

TEST_F(MemoryServiceTest, UpdateSetsCreatedAtAndExpiry) {
  StartService(nullptr);
  ASSERT_EQ(AddAndWait(Verbatim({"likes green tea"})).status, JobStatus::kSucceeded);
  const AgentMemory m = All(Filter(R"({"user_id": "alice"})")).at(0);
  const int64_t far = m.created_at_us + 3600LL * 1000000 * 24 * 365;
  auto updated = service_->Update(
      {.workspace = "w", .id = m.id, .timestamp_us = int64_t{1000000}, .expires_at_us = far});
  ASSERT_TRUE(updated.ok()) << updated.status().ToString();
  EXPECT_EQ(updated->created_at_us, 1000000);
  EXPECT_EQ(updated->expires_at_us, far);
  EXPECT_EQ(updated->text, m.text);
  // Stored: a restart reads the same.
  service_.reset();
  StartService(nullptr);
  auto got = service_->Get("w", m.id);
  ASSERT_TRUE(got.ok());
  EXPECT_EQ(got->created_at_us, 1000000);
  EXPECT_EQ(got->expires_at_us, far);
  auto history = service_->History("w", m.id);
  ASSERT_TRUE(history.ok());
  ASSERT_EQ(history->size(), 2u);
  EXPECT_EQ((*history)[1].event, "UPDATE");
  // Expired by an update: invisible from then on.
  ASSERT_TRUE(service_->Update({.workspace = "w", .id = m.id, .expires_at_us = int64_t{1}}).ok());
  EXPECT_EQ(service_->Get("w", m.id).status().code(), StatusCode::kNotFound);
}

// An update replaces a fact; the version it replaced still answers a search about its time, with
// when it held, after a restart too (from the history). Without dates, or about a later time, the
// current version answers.
TEST_F(MemoryServiceTest, ASearchAboutAnEarlierTimeShowsTheVersionThatHeldThen) {
  StartService(nullptr);
  const int64_t march_2022 = *ParseIsoToMicros("2022-03-01T10:00:00Z");
  const int64_t june_2024 = *ParseIsoToMicros("2024-06-01T10:00:00Z");
  auto says = [](std::string text, int64_t at) {
    MemoryAddRequest r;
    r.workspace = "w";
    r.user_id = "alice";
    r.messages.push_back({"user", std::move(text), at});
    return r;
  };
  ASSERT_EQ(AddAndWait(says("I live in Boston.", march_2022)).status, JobStatus::kSucceeded);
  const MemoryEventRecord update = AddAndWait(says("I live in Denver.", june_2024));
  ASSERT_EQ(update.status, JobStatus::kSucceeded);
  ASSERT_NE(update.result_json.find("UPDATE"), std::string::npos) << update.result_json;
  const std::vector<AgentMemory> all = All(Filter(R"({"user_id": "alice"})"));
  ASSERT_EQ(all.size(), 1u);
  EXPECT_EQ(ValidFromUs(all[0]), june_2024);
  EXPECT_FALSE(all[0].valid_to_us);
  // The time the date prior and the conversation order read is the new version's.
  EXPECT_EQ(all[0].source_ts_us, june_2024);

  auto search = [&](std::string query, bool show_replaced) {
    auto hits = service_->Search({.workspace = "w",
                                  .query = std::move(query),
                                  .filter = Filter(R"({"user_id": "alice"})"),
                                  .show_replaced = show_replaced});
    EXPECT_TRUE(hits.ok()) << hits.status().ToString();
    return hits.ok() && !hits->empty() ? hits->front().memory : AgentMemory{};
  };
  for (int run = 0; run < 2; ++run) {
    SCOPED_TRACE(run == 0 ? "as written" : "after a restart");
    const AgentMemory then = search("where did I live in 2022?", true);
    EXPECT_EQ(then.id, all[0].id);
    EXPECT_NE(then.text.find("Boston"), std::string::npos) << then.text;
    EXPECT_EQ(ValidFromUs(then), march_2022);
    EXPECT_EQ(then.valid_to_us, june_2024);
    EXPECT_NE(search("where did I live in 2022?", false).text.find("Denver"), std::string::npos);
    EXPECT_NE(search("where do I live?", true).text.find("Denver"), std::string::npos);
    const AgentMemory later = search("where did I live in 2025?", true);
    EXPECT_NE(later.text.find("Denver"), std::string::npos);
    EXPECT_FALSE(later.valid_to_us);
    auto stored = service_->Get("w", all[0].id);
    ASSERT_TRUE(stored.ok());
    EXPECT_EQ(stored->source_ts_us, june_2024);
    service_.reset();
    StartService(nullptr);
  }

  // An edit through the API holds from when it was made; a metadata-only change keeps that time.
  auto edited = service_->Update({.workspace = "w", .id = all[0].id, .text = "Lives in Austin"});
  ASSERT_TRUE(edited.ok()) << edited.status().ToString();
  EXPECT_EQ(ValidFromUs(*edited), edited->updated_at_us);
  EXPECT_EQ(edited->source_ts_us, june_2024);  // an edit says nothing of when it was said
  auto retagged = service_->Update(
      {.workspace = "w", .id = all[0].id, .metadata_patch_json = std::string(R"({"k": 1})")});
  ASSERT_TRUE(retagged.ok()) << retagged.status().ToString();
  EXPECT_EQ(ValidFromUs(*retagged), ValidFromUs(*edited));
  const AgentMemory denver = search("where did I live in 2024?", true);
  EXPECT_NE(denver.text.find("Denver"), std::string::npos) << denver.text;
  EXPECT_EQ(denver.valid_to_us, ValidFromUs(*edited));
  service_.reset();
  StartService(nullptr);
  auto reloaded = service_->Get("w", all[0].id);
  ASSERT_TRUE(reloaded.ok());
  EXPECT_EQ(ValidFromUs(*reloaded), ValidFromUs(*edited));
  EXPECT_EQ(reloaded->source_ts_us, june_2024);
  EXPECT_EQ(search("where did I live in 2022?", true).valid_to_us, june_2024);
}

// Time is the service's clock: a memory is visible until its expiry passes on it, and the purge
// that runs every purge_interval of it deletes the memory with a DELETE in its history.
TEST_F(MemoryServiceTest, AMemoryExpiresAndIsPurgedWhenItsClockPassesTheExpiry) {
  FakeClock clock;
  service_ = std::make_unique<MemoryService>(
      store_.get(), &analyzer_, nullptr, &extractor_,
      MemoryServiceOptions{.purge_interval = std::chrono::seconds(600), .clock = &clock});
  ASSERT_TRUE(service_->Start().ok());
  const MemoryEventRecord event = AddAndWait(Verbatim({"parks on level two today"}));
  ASSERT_EQ(event.status, JobStatus::kSucceeded);
  EXPECT_EQ(event.created_at_us, clock.WallMicros());  // stamped by the service's clock
  const AgentMemory m = All(Filter(R"({"user_id": "alice"})")).at(0);
  const int64_t in_an_hour = clock.WallMicros() + int64_t{3600} * 1000000;
  ASSERT_TRUE(service_->Update({.workspace = "w", .id = m.id, .expires_at_us = in_an_hour}).ok());
  clock.Advance(std::chrono::minutes(59));
  EXPECT_TRUE(service_->Get("w", m.id).ok());
  clock.Advance(std::chrono::minutes(2));
  EXPECT_EQ(service_->Get("w", m.id).status().code(), StatusCode::kNotFound);
  EXPECT_TRUE(All(Filter(R"({"user_id": "alice"})")).empty());
  // The purge comes with the next idle interval of the clock; it runs on the service's thread.
  clock.Advance(std::chrono::seconds(601));
  std::vector<HistoryRecord> history;
  for (int i = 0; i < 500; ++i) {
    auto read = service_->History("w", m.id);
    if (read.ok()) history = std::move(*read);
    if (history.size() == 3) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  ASSERT_EQ(history.size(), 3u);
  EXPECT_EQ(history[2].event, "DELETE");
}

TEST(MemoryAddRequestCodingTest, RoundTripsAndReadsOlderRequests) {
  MemoryAddRequest r;
  r.workspace = "w";
  r.messages = {{"user", "hi", 5}};
  r.user_id = "u";
  r.app_id = "shop";
  r.custom_instructions = "Only drinks.";
  r.custom_categories = {{"drinks", "tea or coffee"}};
  auto back = DecodeAddRequest("w", EncodeAddRequest(r));
  ASSERT_TRUE(back.ok());
  EXPECT_EQ(back->app_id, "shop");
  EXPECT_EQ(back->custom_instructions, "Only drinks.");
  EXPECT_EQ(back->custom_categories, r.custom_categories);
  // A request stored before these fields existed.
  auto old = DecodeAddRequest(
      "w", R"({"messages":[{"role":"user","content":"hi","time_us":0}],"user_id":"u",)"
           R"("agent_id":"","run_id":"","metadata":{},"infer":true})");
  ASSERT_TRUE(old.ok());
  EXPECT_EQ(old->app_id, "");
  EXPECT_TRUE(old->custom_instructions.empty());
  EXPECT_TRUE(old->custom_categories.empty());
}

}  // namespace
}  // namespace engram
