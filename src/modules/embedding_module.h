// The embedding module: the text embedder every search and write uses, built from --embedder
// (the built-in model, an OpenAI-compatible endpoint, or none), with the layers in front of it:
// metering (for /metrics), batching of concurrent callers, and the query vector cache.
//
// Ownership: the module owns the model and every layer; the pointers it hands out live as long as
// it does. Thread-safety: the embedders are safe for concurrent use; AppendMetrics may run on any
// thread.
#pragma once

#include <memory>
#include <string>

#include "common/kernel_family.h"
#include "config/serve_options.h"
#include "embed/embedder.h"

namespace engram {

class CachingEmbedder;
class MeteredEmbedder;

// The built-in model beside the binary: installed, PREFIX/bin/engram finds it in
// PREFIX/share/engram/model; in a build tree, build/engram in third_party/model/package/dist.
std::string DefaultModelDir();

class EmbeddingModule {
 public:
  // `family` is the process's kernel family (already chosen). With --embedder none the module
  // holds no embedder (search() and background() are null: BM25 only).
  static Result<std::unique_ptr<EmbeddingModule>> Build(const ServeOptions& options,
                                                        KernelFamily family);
  ~EmbeddingModule();

  // For searches and writes: batched across concurrent callers, queries cached. Null: none.
  const Embedder* search() const { return search_.get(); }
  // The metered model without batching, for background work that batches on its own (the vector
  // backfill), so query embeddings never queue behind it. Null: none.
  const Embedder* background() const;

  struct Stats {
    bool metered = false;
    uint64_t request_nanos = 0, request_texts = 0, request_batches = 0;
    uint64_t background_nanos = 0, background_texts = 0, background_batches = 0;
    bool query_cache = false;
    uint64_t cache_hits = 0, cache_misses = 0, cache_entries = 0;
  };
  Stats stats() const;
  // The model's time, texts and passes by lane, and the query cache's hits, misses and size.
  void AppendMetrics(std::string& out) const;

 private:
  EmbeddingModule() = default;

  std::unique_ptr<Embedder> model_;
  std::unique_ptr<MeteredEmbedder> metered_;  // wraps model_
  std::unique_ptr<Embedder> batching_;        // wraps metered_
  CachingEmbedder* query_cache_ = nullptr;    // search_, when there is a model
  std::unique_ptr<Embedder> search_;          // wraps batching_
};

}  // namespace engram
