#include "embed/batching_embedder.h"

#include <gtest/gtest.h>

#include <atomic>
#include <thread>

#include "common/thread_util.h"

namespace engram {
namespace {

// A small deterministic embedder: counts calls and texts so the test can see batches form.
class CountingEmbedder final : public Embedder {
 public:
  const std::string& model_id() const override { return id_; }
  int dimension() const override { return 2; }
  Result<std::vector<std::vector<float>>> EmbedBatch(
      const std::vector<std::string>& texts) const override {
    ++calls;
    const int now = ++running;
    int seen = most_running.load();
    while (now > seen && !most_running.compare_exchange_weak(seen, now)) {
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
    --running;
    std::vector<std::vector<float>> out;
    for (const auto& t : texts) out.push_back({static_cast<float>(t.size()), 1.0f});
    return out;
  }
  mutable std::atomic<int> calls{0};
  mutable std::atomic<int> running{0};
  mutable std::atomic<int> most_running{0};

 private:
  std::string id_ = "counting";
};

TEST(BatchingEmbedderTest, EveryCallerGetsItsOwnVectors) {
  CountingEmbedder inner;
  BatchingEmbedder batching(&inner, {.max_batch_texts = 8});
  std::vector<std::thread> threads;
  std::atomic<int> wrong{0};
  for (int t = 0; t < 16; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < 10; ++i) {
        std::vector<std::string> texts = {std::string(static_cast<size_t>(t + 1), 'x'),
                                          std::string(static_cast<size_t>(i + 100), 'y')};
        auto r = batching.EmbedBatch(texts);
        if (!r.ok() || r->size() != 2 || (*r)[0][0] != t + 1 || (*r)[1][0] != i + 100) ++wrong;
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(wrong.load(), 0);
  // 320 texts in batches of at most 8: fewer inner calls than the 160 requests.
  EXPECT_LT(inner.calls.load(), 160);
  EXPECT_EQ(batching.model_id(), "counting");
}

// Up to max_leaders batches run at once, never more; every caller still gets its own vectors.
TEST(BatchingEmbedderTest, LeadersRunBatchesSideBySide) {
  for (int leaders : {1, 2, 3}) {
    CountingEmbedder inner;
    BatchingEmbedder batching(&inner, {.max_batch_texts = 4, .max_leaders = leaders});
    std::vector<std::thread> threads;
    std::atomic<int> wrong{0};
    for (int t = 0; t < 12; ++t) {
      threads.emplace_back([&, t] {
        for (int i = 0; i < 8; ++i) {
          auto r = batching.EmbedBatch({std::string(static_cast<size_t>(t * 10 + i + 1), 'x')});
          if (!r.ok() || r->size() != 1 || (*r)[0][0] != t * 10 + i + 1) ++wrong;
        }
      });
    }
    for (auto& th : threads) th.join();
    EXPECT_EQ(wrong.load(), 0) << leaders;
    EXPECT_EQ(inner.most_running.load(), leaders);
  }
}

// Background callers batch on their own: never more than max_background_leaders of their batches
// at once, and a request's text never shares a batch with a background one, while request
// batches still run beside them.
TEST(BatchingEmbedderTest, BackgroundCallersBatchInTheirOwnLane) {
  class LaneEmbedder final : public Embedder {
   public:
    const std::string& model_id() const override { return id_; }
    int dimension() const override { return 1; }
    Result<std::vector<std::vector<float>>> EmbedBatch(
        const std::vector<std::string>& texts) const override {
      const bool background = texts.front().starts_with("bg");
      for (const auto& t : texts) {
        if (t.starts_with("bg") != background) ++mixed;
      }
      std::atomic<int>& running = background ? background_running : request_running;
      std::atomic<int>& most = background ? background_most : request_most;
      const int now = ++running;
      int seen = most.load();
      while (now > seen && !most.compare_exchange_weak(seen, now)) {
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(3));
      --running;
      return std::vector<std::vector<float>>(texts.size(), std::vector<float>{1.0f});
    }
    mutable std::atomic<int> mixed{0}, background_running{0}, background_most{0},
        request_running{0}, request_most{0};

   private:
    std::string id_ = "lanes";
  };
  LaneEmbedder inner;
  BatchingEmbedder batching(&inner, {.max_batch_texts = 4, .max_leaders = 2});
  std::vector<std::thread> threads;
  std::atomic<int> failed{0};
  for (int t = 0; t < 12; ++t) {
    threads.emplace_back([&, t] {
      const bool background = t % 2 == 0;
      if (background) LowerThisThreadPriority(1);
      for (int i = 0; i < 6; ++i) {
        // Background callers also send batches larger than max_batch_texts.
        std::vector<std::string> texts(background && i == 0 ? 6 : 1, background ? "bg" : "rq");
        auto r = batching.EmbedBatch(texts);
        if (!r.ok() || r->size() != texts.size()) ++failed;
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(failed.load(), 0);
  EXPECT_EQ(inner.mixed.load(), 0);
  EXPECT_EQ(inner.background_most.load(), 1);
  EXPECT_EQ(inner.request_most.load(), 2);
}

}  // namespace
}  // namespace engram
