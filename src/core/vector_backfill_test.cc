#include "core/vector_backfill.h"

#include <gtest/gtest.h>
#include <stdlib.h>

#include <chrono>
#include <condition_variable>
#include <filesystem>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "core/leaderboard_service.h"
#include "core/shard_registry.h"
#include "store/sqlite_store.h"

namespace engram {
namespace {

constexpr int kDim = 32;

// The vector of "memo-<i> ..." (the first line that starts so): one-hot at i, so a vector
// handed to the wrong memory (another text, another scope) is told apart from the right one.
std::vector<float> VectorOf(const std::string& text) {
  std::vector<float> v(kDim, 0.0f);
  size_t at = text.rfind("memo-", 0) == 0 ? 0 : text.find("\nmemo-");
  if (at != std::string::npos && at > 0) ++at;
  const size_t i = at == std::string::npos ? 0 : std::stoul(text.substr(at + 5));
  v[i % kDim] = 1.0f;
  return v;
}

// Records the texts of every model pass; the first pass can be held inside the model, so the
// test can queue work while the (only) worker is busy.
class GatedEmbedder final : public Embedder {
 public:
  const std::string& model_id() const override { return id_; }
  int dimension() const override { return kDim; }
  Result<std::vector<std::vector<float>>> EmbedBatch(
      const std::vector<std::string>& texts) const override {
    std::unique_lock<std::mutex> lock(mu_);
    passes_.push_back(texts);
    entered_ = true;
    cv_.notify_all();
    cv_.wait(lock, [this] { return !hold_; });
    std::vector<std::vector<float>> out;
    for (const auto& t : texts) out.push_back(VectorOf(t));
    return out;
  }

  void Hold() {
    std::lock_guard<std::mutex> lock(mu_);
    hold_ = true;
    entered_ = false;
  }
  // Waits until a pass is inside the model.
  void WaitEntered() const {
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait(lock, [this] { return entered_; });
  }
  void Release() {
    std::lock_guard<std::mutex> lock(mu_);
    hold_ = false;
    cv_.notify_all();
  }
  std::vector<std::vector<std::string>> passes() const {
    std::lock_guard<std::mutex> lock(mu_);
    return passes_;
  }
  std::vector<size_t> sizes() const {
    std::vector<size_t> out;
    for (const auto& p : passes()) out.push_back(p.size());
    return out;
  }

 private:
  std::string id_ = "gated";
  mutable std::mutex mu_;
  mutable std::condition_variable cv_;
  mutable std::vector<std::vector<std::string>> passes_;  // guarded by mu_
  mutable bool entered_ = false;                          // guarded by mu_
  bool hold_ = false;                                     // guarded by mu_
};

class VectorBackfillTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/engram-vq-XXXXXX";
    dir_ = mkdtemp(tmpl);
    store_ = std::move(SqliteStore::Open({.path = dir_ + "/db"})).value();
    shard_options_.vector_model = embedder_.model_id();
    shard_options_.vectors.dim = kDim;
  }
  void TearDown() override {
    service_.reset();
    registry_.reset();
    backfill_.reset();
    store_.reset();
    std::filesystem::remove_all(dir_);
  }

  // One worker, so work queued while it is held inside the model waits for the next pass.
  void Start(VectorBackfillOptions options) {
    options.threads = 1;
    options.nice = 0;
    backfill_ = std::make_unique<VectorBackfill>(store_.get(), &embedder_, options);
    registry_ =
        std::make_unique<ShardRegistry>(store_.get(), &analyzer_, shard_options_, backfill_.get());
    service_ = std::make_unique<LeaderboardService>(store_.get(), registry_.get(), &analyzer_,
                                                    &embedder_, backfill_.get());
  }

  static LeaderboardAddRequest Req(const std::string& user, const std::vector<std::string>& texts) {
    LeaderboardAddRequest r;
    r.request_id = "r-" + texts.front();
    r.user_id = user;
    r.session_id = "s";
    for (const auto& t : texts) {
      LeaderboardMessage m;
      m.role = "user";
      m.parts.push_back(ContentPart{.text = t});
      r.messages.push_back(m);
    }
    r.body_hash = r.request_id;
    r.response_json = "{}";
    return r;
  }
  void Add(LeaderboardService& service, const std::string& user,
           const std::vector<std::string>& texts) {
    auto r = service.Add(Req(user, texts));
    ASSERT_TRUE(r.ok()) << r.status().ToString();
  }

  void WaitDrained() {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
    while (backfill_->pending() > 0 && std::chrono::steady_clock::now() < deadline) {
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
    }
    ASSERT_EQ(backfill_->pending(), 0u);
  }

  // Every memory of `user` has, in the store and in its shard, the vector of its own text.
  void ExpectOwnVectors(const std::string& user, size_t expected_memories) {
    auto records = store_->LoadScope("leaderboard", user);
    ASSERT_TRUE(records.ok());
    ASSERT_EQ(records->size(), expected_memories) << user;
    auto shard = registry_->Get("leaderboard", user);
    ASSERT_TRUE(shard.ok());
    EXPECT_TRUE((*shard)->MissingVectors().empty()) << user << ": a vector was not applied";
    RetrievalOptions vector_only;
    vector_only.mode = RetrievalMode::kVector;
    vector_only.neighbours = 0;
    for (const auto& m : *records) {
      EXPECT_EQ(m.vector_model, "gated") << user << ": " << m.text;
      EXPECT_EQ(m.vector, VectorOf(m.text)) << user << ": stored vector of another text";
      auto hits = (*shard)->Search({}, VectorOf(m.text), 1, vector_only);
      ASSERT_EQ(hits.size(), 1u) << user;
      EXPECT_EQ(hits[0].doc.text, m.text) << user << ": the shard holds another text's vector";
    }
  }

  std::string dir_;
  Analyzer analyzer_;
  GatedEmbedder embedder_;
  ShardOptions shard_options_;
  std::unique_ptr<SqliteStore> store_;
  std::unique_ptr<VectorBackfill> backfill_;
  std::unique_ptr<ShardRegistry> registry_;
  std::unique_ptr<LeaderboardService> service_;
};

std::string Memo(int i) { return "memo-" + std::to_string(i) + " walked along the harbour"; }

TEST_F(VectorBackfillTest, AddsOfManyScopesShareOneModelPassAndKeepTheirOwnVectors) {
  Start({});
  embedder_.Hold();
  Add(*service_, "u0", {Memo(0)});
  embedder_.WaitEntered();  // the worker is busy with u0's text
  for (int i = 1; i <= 10; ++i) Add(*service_, "u" + std::to_string(i), {Memo(i)});
  embedder_.Release();
  WaitDrained();
  // Ten adds of one text each, on ten scopes, in one pass instead of ten.
  EXPECT_EQ(embedder_.sizes(), (std::vector<size_t>{1, 10}));
  for (int i = 0; i <= 10; ++i) ExpectOwnVectors("u" + std::to_string(i), 1);
}

TEST_F(VectorBackfillTest, APassTakesAtMostBatchSizeTextsAndSplitsAnAddAcrossPasses) {
  Start({.batch_size = 4});
  embedder_.Hold();
  Add(*service_, "first", {Memo(0)});
  embedder_.WaitEntered();
  Add(*service_, "a", {Memo(1), Memo(2), Memo(3)});
  Add(*service_, "b", {Memo(4), Memo(5), Memo(6)});
  Add(*service_, "c", {Memo(7)});
  embedder_.Release();
  WaitDrained();
  // a's three texts and the first of b's; then the rest of b and c's.
  auto passes = embedder_.passes();
  ASSERT_EQ(embedder_.sizes(), (std::vector<size_t>{1, 4, 3}));
  EXPECT_EQ(passes[1], (std::vector<std::string>{Memo(1), Memo(2), Memo(3), Memo(4)}));
  EXPECT_EQ(passes[2], (std::vector<std::string>{Memo(5), Memo(6), Memo(7)}));
  ExpectOwnVectors("first", 1);
  ExpectOwnVectors("a", 3);
  ExpectOwnVectors("b", 3);
  ExpectOwnVectors("c", 1);
}

TEST_F(VectorBackfillTest, APassStaysWithinMaxBatchBytesButAlwaysTakesOneText) {
  // Memo(i) is 31 bytes for i < 10: two fit in 64 bytes, three do not.
  const std::string longer = "memo-9 " + std::string(200, 'x');
  Start({.max_batch_bytes = 64});
  embedder_.Hold();
  Add(*service_, "first", {Memo(0)});
  embedder_.WaitEntered();
  for (int i = 1; i <= 5; ++i) Add(*service_, "u" + std::to_string(i), {Memo(i)});
  Add(*service_, "long", {longer});
  embedder_.Release();
  WaitDrained();
  EXPECT_EQ(embedder_.sizes(), (std::vector<size_t>{1, 2, 2, 1, 1}));
  EXPECT_EQ(embedder_.passes().back(), std::vector<std::string>{longer})
      << "a text longer than the bound is a pass of its own";
  for (int i = 1; i <= 5; ++i) ExpectOwnVectors("u" + std::to_string(i), 1);
  ExpectOwnVectors("long", 1);
}

TEST_F(VectorBackfillTest, FreshWorkRunsBeforeBackfillAndIsNeverMixedWithIt) {
  // Memories stored without vectors (no embedder then): found by the backfill when loaded.
  {
    ShardRegistry plain(store_.get(), &analyzer_, shard_options_);
    LeaderboardService text_only(store_.get(), &plain, &analyzer_, nullptr, nullptr);
    Add(text_only, "old1", {Memo(20)});
    Add(text_only, "old2", {Memo(21), Memo(22)});
  }
  Start({});
  embedder_.Hold();
  Add(*service_, "first", {Memo(0)});
  embedder_.WaitEntered();
  ASSERT_TRUE(registry_->Get("leaderboard", "old1").ok());  // queues its backfill
  ASSERT_TRUE(registry_->Get("leaderboard", "old2").ok());
  Add(*service_, "new1", {Memo(1)});
  Add(*service_, "new2", {Memo(2)});
  embedder_.Release();
  WaitDrained();
  auto passes = embedder_.passes();
  ASSERT_EQ(passes.size(), 3u);
  EXPECT_EQ(passes[1], (std::vector<std::string>{Memo(1), Memo(2)})) << "fresh adds first";
  EXPECT_EQ(passes[2], (std::vector<std::string>{Memo(20), Memo(21), Memo(22)}));
  for (const char* user : {"first", "new1", "new2", "old1"}) ExpectOwnVectors(user, 1);
  ExpectOwnVectors("old2", 2);
}

// While too many bytes of text wait for vectors, an add is held at most admission_wait and then
// refused (kThrottled, nothing stored); once the backlog drains, adds are taken again.
TEST_F(VectorBackfillTest, AnAddBeyondTheBacklogWaitsBrieflyThenIsRefusedAndStoresNothing) {
  Start({.max_pending_fresh_bytes = 100, .admission_wait = std::chrono::milliseconds(200)});
  embedder_.Hold();
  Add(*service_, "first", {Memo(0)});
  embedder_.WaitEntered();  // the worker holds memo-0 inside the model: its bytes are pending
  Add(*service_, "second", {Memo(1), Memo(2)});  // within the limit (memo-0 is ~30 bytes)
  const std::string long_text = Memo(3) + std::string(200, 'x');
  const auto began = std::chrono::steady_clock::now();
  auto refused = service_->Add(Req("third", {long_text}));
  const auto held = std::chrono::steady_clock::now() - began;
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.status().code(), StatusCode::kThrottled);
  EXPECT_GE(held, std::chrono::milliseconds(150));
  EXPECT_LT(held, std::chrono::seconds(5));
  auto nothing = store_->LoadScope("leaderboard", "third");
  ASSERT_TRUE(nothing.ok());
  EXPECT_TRUE(nothing->empty());
  embedder_.Release();
  WaitDrained();
  // An empty backlog takes any add, however long.
  Add(*service_, "third", {long_text});
  WaitDrained();
  ExpectOwnVectors("third", 1);
}

TEST_F(VectorBackfillTest, ShutdownDiscardsThePassInProgressAndTheQueue) {
  Start({});
  embedder_.Hold();
  Add(*service_, "u0", {Memo(0)});
  embedder_.WaitEntered();
  Add(*service_, "u1", {Memo(1)});
  Add(*service_, "u2", {Memo(2)});
  // The worker is still inside the model: not finished within a zero grace.
  EXPECT_FALSE(backfill_->Shutdown(std::chrono::milliseconds(0)));
  embedder_.Release();
  service_.reset();
  registry_.reset();
  backfill_.reset();  // joins the worker, which writes nothing after Shutdown
  EXPECT_EQ(embedder_.sizes(), std::vector<size_t>{1}) << "no pass starts after Shutdown";
  for (const char* user : {"u0", "u1", "u2"}) {
    auto records = store_->LoadScope("leaderboard", user);
    ASSERT_TRUE(records.ok());
    ASSERT_EQ(records->size(), 1u);
    EXPECT_TRUE((*records)[0].vector.empty()) << user << ": written after Shutdown";
  }
}

TEST_F(VectorBackfillTest, ALongMessageGetsAVectorPerPassageStoredTogether) {
  Start({});
  // memo-<i> at the head of each passage: each passage's vector differs from the others.
  std::string text = "harbour notes\n";
  for (int i = 0; text.size() < 5 * kTargetPassageBytes; ++i) {
    std::string paragraph = Memo(i) + "\n";
    while (paragraph.size() < kTargetPassageBytes - 100) paragraph += "the tide came in slowly\n";
    text += paragraph + "\n";
  }
  const std::vector<PassageSpan> spans = SplitPassages(text);
  ASSERT_GT(spans.size(), 3u);
  Add(*service_, "long", {text, Memo(1)});
  WaitDrained();
  // One pass embeds the passages (after the first, with the message's first line) and the short
  // message; the store keeps them concatenated.
  std::vector<std::string> expected;
  for (const auto& s : spans) {
    expected.push_back((s.begin == 0 ? "" : "harbour notes\n") + text.substr(s.begin, s.size()));
  }
  expected.push_back(Memo(1));
  EXPECT_EQ(embedder_.passes(), (std::vector<std::vector<std::string>>{expected}));
  auto records = store_->LoadScope("leaderboard", "long");
  ASSERT_TRUE(records.ok());
  ASSERT_EQ(records->size(), 2u);
  std::vector<float> joined;
  for (size_t i = 0; i < spans.size(); ++i) {
    const std::vector<float> v = VectorOf(expected[i]);
    EXPECT_EQ(v, VectorOf(Memo(static_cast<int>(i))));
    joined.insert(joined.end(), v.begin(), v.end());
  }
  EXPECT_EQ((*records)[0].vector, joined);
  // A cold load of the scope reads them back: no passage lacks its vector.
  ShardRegistry cold(store_.get(), &analyzer_, shard_options_, nullptr);
  auto shard = cold.Get("leaderboard", "long");
  ASSERT_TRUE(shard.ok());
  EXPECT_TRUE((*shard)->MissingVectors().empty());
}

TEST_F(VectorBackfillTest, ARetryOfAStoredAddIsAnsweredAtOnceWhileTheBacklogIsFull) {
  Start({.max_pending_fresh_bytes = 100, .admission_wait = std::chrono::milliseconds(200)});
  embedder_.Hold();
  Add(*service_, "first", {Memo(0)});
  embedder_.WaitEntered();
  Add(*service_, "second", {Memo(1), Memo(2)});  // stored; the backlog is now full
  const auto began = std::chrono::steady_clock::now();
  auto retry = service_->Add(Req("second", {Memo(1), Memo(2)}));
  const auto took = std::chrono::steady_clock::now() - began;
  ASSERT_TRUE(retry.ok()) << retry.status().ToString();  // its first answer, not 429
  EXPECT_EQ(*retry, "{}");
  EXPECT_LT(took, std::chrono::milliseconds(150)) << "the retry waited for room it does not need";
  // The same request_id with another body is still a conflict, also at once.
  LeaderboardAddRequest other = Req("second", {Memo(1), Memo(2)});
  other.body_hash = "another body";
  auto conflict = service_->Add(other);
  ASSERT_FALSE(conflict.ok());
  EXPECT_EQ(conflict.status().code(), StatusCode::kConflict);
  embedder_.Release();
  WaitDrained();
  ExpectOwnVectors("second", 2);  // stored once
}

}  // namespace
}  // namespace engram
