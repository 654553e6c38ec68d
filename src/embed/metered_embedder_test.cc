#include "embed/metered_embedder.h"

#include <gtest/gtest.h>

#include <chrono>
#include <thread>

#include "common/thread_util.h"

namespace engram {
namespace {

// Sleeps a little per call so the measured model time is visibly above zero.
class SlowEmbedder final : public Embedder {
 public:
  const std::string& model_id() const override { return id_; }
  int dimension() const override { return 2; }
  Result<std::vector<std::vector<float>>> EmbedBatch(
      const std::vector<std::string>& texts) const override {
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
    if (!texts.empty() && texts[0] == "fail") return Status::Internal("model failed");
    return std::vector<std::vector<float>>(texts.size(), {1.0f, 0.0f});
  }

 private:
  std::string id_ = "slow";
};

TEST(MeteredEmbedderTest, CountsBatchesTextsAndTimePerLane) {
  SlowEmbedder inner;
  MeteredEmbedder metered(&inner);
  ASSERT_TRUE(metered.EmbedBatch({"a", "b", "c"}).ok());
  ASSERT_TRUE(metered.EmbedQuery("q").ok());
  auto request = metered.usage(EmbedLane::kRequest);
  EXPECT_EQ(request.batches, 2u);
  EXPECT_EQ(request.texts, 4u);
  EXPECT_GE(request.nanos, 4'000'000u) << "two calls of at least 2 ms each";
  EXPECT_EQ(metered.usage(EmbedLane::kBackground).batches, 0u);

  std::thread background([&] {
    LowerThisThreadPriority(1);
    // A failed pass still used the model.
    EXPECT_FALSE(metered.EmbedBatch({"fail", "x"}).ok());
    ASSERT_TRUE(metered.EmbedBatch({"y"}).ok());
  });
  background.join();
  auto bg = metered.usage(EmbedLane::kBackground);
  EXPECT_EQ(bg.batches, 2u);
  EXPECT_EQ(bg.texts, 3u);
  EXPECT_GE(bg.nanos, 4'000'000u);
  EXPECT_EQ(metered.usage(EmbedLane::kRequest).batches, 2u) << "the request lane is unchanged";
  EXPECT_EQ(metered.model_id(), "slow");
  EXPECT_EQ(metered.dimension(), 2);
}

}  // namespace
}  // namespace engram
