#include "core/leaderboard_service.h"

#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>
#include <functional>
#include <mutex>
#include <thread>

#include "store/sqlite_store.h"

namespace engram {
namespace {

class LeaderboardServiceTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/engram-lb-XXXXXX";
    dir_ = mkdtemp(tmpl);
    store_ = std::move(SqliteStore::Open({.path = dir_ + "/db"})).value();
    registry_ = std::make_unique<ShardRegistry>(store_.get(), &analyzer_, ShardOptions{});
    service_ = std::make_unique<LeaderboardService>(store_.get(), registry_.get(), &analyzer_,
                                                    nullptr, nullptr);
  }
  void TearDown() override {
    service_.reset();
    registry_.reset();
    store_.reset();
    std::filesystem::remove_all(dir_);
  }

  static LeaderboardAddRequest Req(const std::string& rid, const std::string& user,
                                   const std::string& text, const std::string& hash) {
    LeaderboardAddRequest r;
    r.request_id = rid;
    r.user_id = user;
    r.session_id = "s";
    LeaderboardMessage m;
    m.role = "user";
    m.timestamp_ms = 1704067200000;
    m.parts.push_back(ContentPart{.text = text});
    r.messages.push_back(m);
    r.body_hash = hash;
    r.response_json = "{\"rid\":\"" + rid + "\"}";
    return r;
  }

  size_t Count(const std::string& user, const std::string& query) {
    auto r = service_->Search({.query = query, .user_id = user, .top_k = 100});
    EXPECT_TRUE(r.ok());
    return r->hits.size();
  }

  std::string dir_;
  Analyzer analyzer_;
  std::unique_ptr<SqliteStore> store_;
  std::unique_ptr<ShardRegistry> registry_;
  std::unique_ptr<LeaderboardService> service_;
};

TEST_F(LeaderboardServiceTest, AddIsSearchableAtOnceAndIsolatedPerUser) {
  ASSERT_TRUE(service_->Add(Req("r1", "alice", "pelicans nest on the pier", "h1")).ok());
  EXPECT_EQ(Count("alice", "pelicans"), 1u);
  EXPECT_EQ(Count("bob", "pelicans"), 0u);
  auto r = service_->Search({.query = "pelicans", .user_id = "alice", .top_k = 5});
  ASSERT_EQ(r->hits.size(), 1u);
  EXPECT_EQ(r->hits[0].time_us, 1704067200000000LL);
}

TEST_F(LeaderboardServiceTest, RetriesAreIdempotentAndConflictsDetected) {
  auto first = service_->Add(Req("r1", "u", "kayak trip", "h1"));
  auto again = service_->Add(Req("r1", "u", "kayak trip", "h1"));
  ASSERT_TRUE(first.ok() && again.ok());
  EXPECT_EQ(*first, *again);
  auto conflict = service_->Add(Req("r1", "u", "other", "h2"));
  EXPECT_EQ(conflict.status().code(), StatusCode::kConflict);
  EXPECT_EQ(Count("u", "kayak"), 1u);
}

TEST_F(LeaderboardServiceTest, ConcurrentRetriesStoreOnce) {
  std::vector<std::thread> threads;
  std::atomic<int> ok{0};
  for (int i = 0; i < 8; ++i) {
    threads.emplace_back([&] { ok += service_->Add(Req("same", "u", "glacier hike", "h")).ok(); });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(ok.load(), 8);
  EXPECT_EQ(Count("u", "glacier"), 1u);
}

TEST_F(LeaderboardServiceTest, RestartRebuildsFromStore) {
  ASSERT_TRUE(service_->Add(Req("r1", "u", "volcano photos", "h1")).ok());
  service_.reset();
  registry_ = std::make_unique<ShardRegistry>(store_.get(), &analyzer_, ShardOptions{});
  service_ = std::make_unique<LeaderboardService>(store_.get(), registry_.get(), &analyzer_,
                                                  nullptr, nullptr);
  EXPECT_EQ(Count("u", "volcano"), 1u);
  EXPECT_EQ(service_->Add(Req("r1", "u", "volcano photos", "h1")).value(), "{\"rid\":\"r1\"}");
  EXPECT_EQ(Count("u", "volcano"), 1u);
}

// Records the texts it is asked to embed; each text's vector is `vector_of(text)`, by default the
// same unit vector for all.
class RecordingEmbedder : public Embedder {
 public:
  using VectorOf = std::function<std::vector<float>(const std::string&)>;
  explicit RecordingEmbedder(VectorOf vector_of =
                                 [](const std::string&) {
                                   return std::vector<float>{1.0f, 0.0f};
                                 })
      : vector_of_(std::move(vector_of)) {}
  const std::string& model_id() const override { return id_; }
  int dimension() const override { return 2; }
  Result<std::vector<std::vector<float>>> EmbedBatch(
      const std::vector<std::string>& texts) const override {
    std::lock_guard<std::mutex> lock(mu_);
    seen_.insert(seen_.end(), texts.begin(), texts.end());
    std::vector<std::vector<float>> out;
    for (const auto& t : texts) out.push_back(vector_of_(t));
    return out;
  }
  std::vector<std::string> seen() const {
    std::lock_guard<std::mutex> lock(mu_);
    return seen_;
  }

 private:
  std::string id_ = "recording";
  VectorOf vector_of_;
  mutable std::mutex mu_;
  mutable std::vector<std::string> seen_;
};

TEST_F(LeaderboardServiceTest, QueryIsEmbeddedWithoutItsQuestionMark) {
  RecordingEmbedder embedder;
  LeaderboardService service(store_.get(), registry_.get(), &analyzer_, &embedder, nullptr);
  ASSERT_TRUE(service.Add(Req("r1", "u", "We went to the lake.", "h1")).ok());
  auto r = service.Search({.query = "Where did they go? ", .user_id = "u", .top_k = 5});
  ASSERT_TRUE(r.ok());
  ASSERT_FALSE(embedder.seen().empty());
  EXPECT_EQ(embedder.seen().back(), "Where did they go");
}

TEST_F(LeaderboardServiceTest, AQueryNamingAnIdentifierLeansOnItsWords) {
  // The vectors of a code search gone wrong: every text looks alike to the model except the one
  // that holds the identifier (it mentions "frame").
  RecordingEmbedder embedder([](const std::string& t) {
    return t.find("frame") != std::string::npos && t.find("Which") == std::string::npos
               ? std::vector<float>{0.0f, 1.0f}
               : std::vector<float>{1.0f, 0.0f};
  });
  ShardRegistry registry(store_.get(), &analyzer_,
                         ShardOptions{.vectors = {.dim = 2}, .vector_model = "recording"});
  auto first_of = [&](float identifier_weight, const std::string& query) {
    LeaderboardOptions options;
    options.retrieval.identifier_vector_weight = identifier_weight;
    options.retrieval.neighbours = 0;
    LeaderboardService service(store_.get(), &registry, &analyzer_, &embedder, nullptr, options);
    auto r = service.Search({.query = query, .user_id = "u", .top_k = 3});
    EXPECT_TRUE(r.ok());
    return r.ok() && !r->hits.empty() ? r->hits[0].text : std::string();
  };
  {
    LeaderboardService service(store_.get(), &registry, &analyzer_, &embedder, nullptr);
    int i = 0;
    for (const char* text :
         {"int draw_frame_fast(struct canvas *c);", "int draw_line(struct canvas *c);",
          "int draw_text(struct canvas *c);", "int draw_circle(struct canvas *c);",
          "int draw_image(struct canvas *c);", "void canvas_flush(struct canvas *c);"}) {
      const std::string rid = "r" + std::to_string(i++);
      ASSERT_TRUE(service.Add(Req(rid, "u", text, rid)).ok());
    }
  }
  const std::string query = "Which header declares draw_frame_fast and its canvas?";
  // With the usual weight the model's lookalikes outrank the declaration; leaning on the words
  // (the identifier weight) brings it first. A query without an identifier keeps the usual one.
  EXPECT_NE(first_of(0.5f, query), "int draw_frame_fast(struct canvas *c);");
  EXPECT_EQ(first_of(0.1f, query), "int draw_frame_fast(struct canvas *c);");
  EXPECT_EQ(first_of(0.1f, "Which header declares drawing on a canvas?"),
            first_of(0.5f, "Which header declares drawing on a canvas?"));
}

}  // namespace
}  // namespace engram

namespace engram {
namespace {

TEST_F(LeaderboardServiceTest, EmptyMessagesKeepTheOrderAndAreNeverReturned) {
  LeaderboardAddRequest r = Req("r1", "u", "the lighthouse keeper waved", "h1");
  for (const char* blank : {"", "   ", "\t\n", "\xE3\x80\x80", "\xC2\xA0 "}) {
    LeaderboardMessage m;
    m.role = "assistant";
    m.parts.push_back(ContentPart{.text = blank});
    r.messages.push_back(m);
  }
  LeaderboardMessage parts;  // a ContentPart array with nothing in it
  parts.role = "user";
  parts.content_is_parts = true;
  r.messages.push_back(parts);
  LeaderboardMessage last;
  last.role = "user";
  last.parts.push_back(ContentPart{.text = "the lighthouse was painted red"});
  r.messages.push_back(last);
  ASSERT_TRUE(service_->Add(r).ok());
  auto scope = store_->LoadScope("leaderboard", "u");
  ASSERT_TRUE(scope.ok());
  ASSERT_EQ(scope->size(), 2u) << "empty messages are not stored";
  EXPECT_EQ((*scope)[0].position, 0);
  EXPECT_EQ((*scope)[1].position, 7) << "the last message keeps its place in the source order";
  auto hits = service_->Search({.query = "lighthouse", .user_id = "u", .top_k = 100});
  ASSERT_TRUE(hits.ok());
  EXPECT_EQ(hits->hits.size(), 2u);
  for (const auto& h : hits->hits) EXPECT_FALSE(h.text.empty());
}

TEST_F(LeaderboardServiceTest, AChunkOfOnlyEmptyMessagesSucceedsAndIsRemembered) {
  LeaderboardAddRequest r = Req("r1", "u", "", "h1");
  auto first = service_->Add(r);
  ASSERT_TRUE(first.ok()) << first.status().ToString();
  EXPECT_TRUE(store_->LoadScope("leaderboard", "u")->empty());
  EXPECT_EQ(service_->Add(Req("r1", "u", "", "h2")).status().code(), StatusCode::kConflict);
}

TEST_F(LeaderboardServiceTest, TwoUsersMayUseTheSameRequestId) {
  ASSERT_TRUE(service_->Add(Req("r1", "alice", "alpine meadow", "ha")).ok());
  ASSERT_TRUE(service_->Add(Req("r1", "bob", "alpine meadow", "hb")).ok());
  EXPECT_EQ(Count("alice", "meadow"), 1u);
  EXPECT_EQ(Count("bob", "meadow"), 1u);
}

TEST_F(LeaderboardServiceTest, DeleteUserEmptiesItsSearchesAndIsIdempotent) {
  ASSERT_TRUE(service_->Add(Req("r1", "alice", "pelicans nest on the pier", "h1")).ok());
  ASSERT_TRUE(service_->Add(Req("r1", "bob", "pelicans everywhere", "h2")).ok());
  ASSERT_EQ(Count("alice", "pelicans"), 1u);  // the shard is loaded
  auto deleted = service_->DeleteUser("alice");
  ASSERT_TRUE(deleted.ok()) << deleted.status().ToString();
  EXPECT_EQ(deleted->messages, 1);
  EXPECT_EQ(deleted->idempotency, 1);
  EXPECT_EQ(Count("alice", "pelicans"), 0u) << "the in-memory shard was dropped";
  EXPECT_EQ(Count("bob", "pelicans"), 1u);
  auto again = service_->DeleteUser("alice");
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(again->messages, 0);
  // The same request_id stores again after the deletion.
  ASSERT_TRUE(service_->Add(Req("r1", "alice", "pelicans came back", "h3")).ok());
  EXPECT_EQ(Count("alice", "pelicans"), 1u);
}

}  // namespace
}  // namespace engram
