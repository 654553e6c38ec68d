// The Leaderboard module: the Agent Memory Leaderboard's Add/Search API. Its shard cache (one
// shard per workspace and user, under the shared budget), the service, the OCR of images sent with
// multimodal adds, the data lifecycle sweeps (retention, idempotency expiry) and the routes.
//
// Ownership: owns what it builds; the store and the retrieval module must outlive it.
// Thread-safety: the service and the stats are safe for concurrent use; Build, RegisterRoutes and
// Shutdown run on the thread that composes the server.
#pragma once

#include <memory>
#include <string>

#include "config/serve_options.h"
#include "core/leaderboard_service.h"

namespace engram {

class Embedder;
class ImageTextExtractor;
class LeaderboardJanitor;
class RetrievalModule;
class Router;
class ShardRegistry;
class MessageStore;

struct LeaderboardModuleDeps {
  MessageStore* store = nullptr;
  RetrievalModule* retrieval = nullptr;
  const Embedder* embedder = nullptr;  // null: BM25 only
};

class LeaderboardModule {
 public:
  static Result<std::unique_ptr<LeaderboardModule>> Build(const ServeOptions& options,
                                                          LeaderboardModuleDeps deps);
  ~LeaderboardModule();

  LeaderboardService* service() { return service_.get(); }

  // Starts the lifecycle sweeps (when retention or expiry is on).
  void Start();
  void RegisterRoutes(Router& router) const;
  // Stops the sweeps and the store's change notifications: after it nothing here calls the store.
  void Shutdown();

  struct Stats {
    uint64_t shard_memories = 0;  // messages held in loaded shards
    uint64_t shard_loads = 0;
    double shard_load_seconds = 0;
    uint64_t purged_users = 0, purged_messages = 0, purged_images = 0;
    uint64_t idempotency_expired = 0, sweep_failures = 0;
  };
  Stats stats() const;
  void AppendMetrics(std::string& out) const;

 private:
  LeaderboardModule() = default;

  double retention_days_ = 0;
  uint64_t max_image_bytes_ = 0;
  uint64_t max_request_image_bytes_ = 0;
  std::unique_ptr<ShardRegistry> shards_;
  std::unique_ptr<ImageTextExtractor> ocr_;  // null when --ocr is off or tesseract is missing
  std::unique_ptr<LeaderboardService> service_;
  std::unique_ptr<LeaderboardJanitor> janitor_;  // stopped before the service goes
};

}  // namespace engram
