#include "embed/use_lite.h"

#if defined(__x86_64__)
#include <immintrin.h>
#endif

#include <algorithm>
#include <cmath>
#include <cstring>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>
#include <utility>

namespace engram {
namespace {

constexpr char kModelId[] = "use-lite-512@0.2.0";
constexpr int kWidth = 512;  // model width after layer 0's residual projection

// Weight names in model.json. Most live under the "apply" scope, kernels of 1x1 convolutions and
// the embedding table under "module/".
const std::string kApply = "module_apply_default/Encoder_en/KonaTransformer/";
const std::string kModule = "module/Encoder_en/KonaTransformer/";

std::string LayerVar(int layer, const std::string& rest) {
  return kApply + "Encode/Layer_" + std::to_string(layer) + "/TransformerLayer/" + rest;
}
std::string StackVar(int layer, const std::string& rest) {
  return kApply + "Encode/TransformerStack/Layer_" + std::to_string(layer) + "/TransformerLayer/" +
         rest;
}
std::string ModuleVar(int layer, const std::string& rest) {
  return kModule + "Encode/Layer_" + std::to_string(layer) + "/TransformerLayer/" + rest;
}

Result<std::string> ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return Status::NotFound("cannot open " + path);
  std::stringstream buffer;
  buffer << in.rdbuf();
  if (in.bad()) return Status::Internal("cannot read " + path);
  return buffer.str();
}

// The tensors of model.json's weightsManifest, backed by the concatenated shard bytes.
class WeightStore {
 public:
  Status Load(const std::string& dir, const nlohmann::json& manifest) {
    if (!manifest.is_array()) return Status::Internal("model.json has no weightsManifest");
    for (const auto& group : manifest) {
      if (!group.contains("paths") || !group.contains("weights")) {
        return Status::Internal("malformed weightsManifest group");
      }
      std::string bytes;
      for (const auto& path : group["paths"]) {
        if (!path.is_string()) return Status::Internal("malformed shard path");
        Result<std::string> shard = ReadFile(dir + "/" + path.get<std::string>());
        if (!shard.ok()) return shard.status();
        bytes += *shard;
      }
      groups_.push_back(std::move(bytes));
      const std::string& data = groups_.back();
      size_t offset = 0;
      for (const auto& w : group["weights"]) {
        if (!w.contains("name") || !w.contains("shape") || !w.contains("dtype")) {
          return Status::Internal("malformed weight entry");
        }
        if (w.contains("quantization")) return Status::Internal("quantised weights unsupported");
        Tensor t;
        t.dtype = w["dtype"].get<std::string>();
        if (t.dtype != "float32" && t.dtype != "int32") {
          return Status::Internal("unsupported dtype " + t.dtype);
        }
        size_t count = 1;
        for (const auto& d : w["shape"]) {
          t.shape.push_back(d.get<int64_t>());
          count *= static_cast<size_t>(t.shape.back());
        }
        t.count = count;
        t.group = groups_.size() - 1;
        t.offset = offset;
        offset += count * 4;  // both supported dtypes are 4 bytes
        if (offset > data.size()) return Status::Internal("weight shards are truncated");
        tensors_[w["name"].get<std::string>()] = std::move(t);
      }
    }
    return Status::Ok();
  }

  // Copies a float32 tensor, checking its element count (shapes like [1,1,256,768] and [256,768]
  // describe the same matrix, so only the count and the caller's view matter).
  Result<std::vector<float>> Floats(const std::string& name, size_t expected_count) const {
    auto it = tensors_.find(name);
    if (it == tensors_.end()) return Status::Internal("model.json lacks weight " + name);
    const Tensor& t = it->second;
    if (t.dtype != "float32" || t.count != expected_count) {
      return Status::Internal("weight " + name + " has an unexpected type or size");
    }
    std::vector<float> v(t.count);
    std::memcpy(v.data(), groups_[t.group].data() + t.offset, t.count * sizeof(float));
    return v;
  }

  Result<float> FloatScalar(const std::string& name) const {
    Result<std::vector<float>> v = Floats(name, 1);
    if (!v.ok()) return v.status();
    return v->front();
  }

  Result<int32_t> IntScalar(const std::string& name) const {
    auto it = tensors_.find(name);
    if (it == tensors_.end()) return Status::Internal("model.json lacks weight " + name);
    const Tensor& t = it->second;
    if (t.dtype != "int32" || t.count != 1) return Status::Internal("weight " + name + " not int");
    int32_t v;
    std::memcpy(&v, groups_[t.group].data() + t.offset, sizeof(v));
    return v;
  }

  Result<std::vector<int64_t>> Shape(const std::string& name) const {
    auto it = tensors_.find(name);
    if (it == tensors_.end()) return Status::Internal("model.json lacks weight " + name);
    return it->second.shape;
  }

 private:
  struct Tensor {
    std::string dtype;
    std::vector<int64_t> shape;
    size_t count = 0;
    size_t group = 0;
    size_t offset = 0;
  };
  std::vector<std::string> groups_;
  std::map<std::string, Tensor> tensors_;
};

// Local to this file (undefined at its end) so it cannot clash with a future shared macro.
#define EMBED_ASSIGN_OR_RETURN(lhs, expr) \
  do {                                    \
    auto _r = (expr);                     \
    if (!_r.ok()) return _r.status();     \
    lhs = std::move(_r).value();          \
  } while (0)

Status LoadMatrix(const WeightStore& w, const std::string& name, int rows, int cols,
                  PackedMatrix* out) {
  std::vector<float> m;
  EMBED_ASSIGN_OR_RETURN(m, w.Floats(name, static_cast<size_t>(rows) * cols));
  *out = PackedMatrix::Pack(m.data(), rows, cols);
  return Status::Ok();
}

Status LoadLayer(const WeightStore& w, int index, int width, UseLiteEmbedder::Layer* layer) {
  layer->width = width;
  const std::string ln = "layer_prepostprocess/layer_norm/";
  const std::string concat = "/ConcatPartitions/concat";
  EMBED_ASSIGN_OR_RETURN(layer->ln_scale,
                         w.Floats(LayerVar(index, ln + "layer_norm_scale" + concat), width));
  EMBED_ASSIGN_OR_RETURN(layer->ln_bias,
                         w.Floats(LayerVar(index, ln + "layer_norm_bias" + concat), width));
  ENGRAM_RETURN_IF_ERROR(
      LoadMatrix(w, ModuleVar(index, "MultiheadAttention/qkv_transform_single/kernel/part_0"),
                 width, 3 * width, &layer->qkv));
  EMBED_ASSIGN_OR_RETURN(
      layer->qkv_bias,
      w.Floats(LayerVar(index, "MultiheadAttention/qkv_transform_single/bias" + concat),
               3 * width));
  ENGRAM_RETURN_IF_ERROR(
      LoadMatrix(w, ModuleVar(index, "MultiheadAttention/output_transform_single/kernel/part_0"),
                 width, kWidth, &layer->out));
  EMBED_ASSIGN_OR_RETURN(
      layer->out_bias,
      w.Floats(LayerVar(index, "MultiheadAttention/output_transform_single/bias" + concat),
               kWidth));
  // Head size comes from the graph's split_heads reshape; the query scale is its own constant
  // (1/sqrt(head size) in this model, but we use what the graph multiplies by).
  int32_t head_dim;
  EMBED_ASSIGN_OR_RETURN(
      head_dim, w.IntScalar(StackVar(
                    index, "MultiheadAttention/split_heads/split_last_dimension/Reshape/shape/3")));
  if (head_dim <= 0 || width % head_dim != 0) return Status::Internal("bad attention head size");
  layer->head_dim = head_dim;
  layer->heads = width / head_dim;
  EMBED_ASSIGN_OR_RETURN(layer->query_scale,
                         w.FloatScalar(StackVar(index, "MultiheadAttention/mul/y")));
  if (width != kWidth) {
    // Layer 0 widens 256 -> 512, so its residual path goes through a dense layer
    // (AdjustResidualInput in the graph).
    ENGRAM_RETURN_IF_ERROR(
        LoadMatrix(w, LayerVar(index, "dense/kernel" + concat), width, kWidth, &layer->residual));
    EMBED_ASSIGN_OR_RETURN(layer->residual_bias,
                           w.Floats(LayerVar(index, "dense/bias" + concat), kWidth));
  }
  const std::string ffn_ln = "FFN/layer_prepostprocess/layer_norm/";
  EMBED_ASSIGN_OR_RETURN(layer->ffn_ln_scale,
                         w.Floats(LayerVar(index, ffn_ln + "layer_norm_scale" + concat), kWidth));
  EMBED_ASSIGN_OR_RETURN(layer->ffn_ln_bias,
                         w.Floats(LayerVar(index, ffn_ln + "layer_norm_bias" + concat), kWidth));
  std::vector<int64_t> shape;
  EMBED_ASSIGN_OR_RETURN(shape, w.Shape(StackVar(index, "FFN/conv1/Tensordot/Reshape_1")));
  if (shape.size() != 2 || shape[0] != kWidth) return Status::Internal("bad FFN shape");
  const int hidden = static_cast<int>(shape[1]);
  ENGRAM_RETURN_IF_ERROR(LoadMatrix(w, StackVar(index, "FFN/conv1/Tensordot/Reshape_1"), kWidth,
                                    hidden, &layer->ffn_in));
  EMBED_ASSIGN_OR_RETURN(layer->ffn_in_bias,
                         w.Floats(LayerVar(index, "FFN/conv1/bias" + concat), hidden));
  ENGRAM_RETURN_IF_ERROR(LoadMatrix(w, StackVar(index, "FFN/conv2/Tensordot/Reshape_1"), hidden,
                                    kWidth, &layer->ffn_out));
  EMBED_ASSIGN_OR_RETURN(layer->ffn_out_bias,
                         w.Floats(LayerVar(index, "FFN/conv2/bias" + concat), kWidth));
  return Status::Ok();
}

// Checks the graph facts the native port relies on, so a different model package fails loudly
// at Load instead of producing plausible garbage.
Status CheckGraph(const nlohmann::json& topology) {
  if (!topology.contains("node") || !topology["node"].is_array()) {
    return Status::Internal("model.json has no graph nodes");
  }
  std::map<std::string, const nlohmann::json*> nodes;
  for (const auto& node : topology["node"]) {
    if (node.contains("name") && node["name"].is_string())
      nodes[node["name"].get<std::string>()] = &node;
  }
  auto input = [&](const std::string& name, size_t i) -> std::string {
    auto it = nodes.find(name);
    if (it == nodes.end() || !it->second->contains("input")) return "";
    const auto& in = (*it->second)["input"];
    return i < in.size() && in[i].is_string() ? in[i].get<std::string>() : "";
  };
  // Token ids index the embedding table directly (no offset): the lookup gathers `values`.
  if (input(kApply + "Encode/embedding_lookup", 0) != "module/Embeddings_en" ||
      input(kApply + "Encode/embedding_lookup", 1) != kApply + "ClipToMaxLength/GatherV2_1" ||
      input(kApply + "ClipToMaxLength/GatherV2_1", 0) != "values") {
    return Status::Internal("unexpected embedding lookup in model graph");
  }
  // Layer 0's input is embedding + (embedding + timing signal).
  const std::string add = kApply + "Encode/TransformerStack/Layer_0/add";
  if (input(add, 0) != kApply + "Encode/Scatter/ScatterNd" ||
      input(add, 1) !=
          kApply + "Encode/TransformerStack/Layer_0/AddTimingSignal/Scatter/ScatterNd") {
    return Status::Internal("unexpected layer 0 input in model graph");
  }
  return Status::Ok();
}

void LayerNorm(const float* x, int rows, int width, const std::vector<float>& scale,
               const std::vector<float>& bias, float epsilon, float* y) {
  for (int r = 0; r < rows; ++r) {
    const float* in = x + static_cast<size_t>(r) * width;
    float* out = y + static_cast<size_t>(r) * width;
    double sum = 0;
    for (int i = 0; i < width; ++i) sum += in[i];
    const float mean = static_cast<float>(sum / width);
    double sq = 0;
    for (int i = 0; i < width; ++i) sq += static_cast<double>(in[i] - mean) * (in[i] - mean);
    const float inv = 1.0f / std::sqrt(static_cast<float>(sq / width) + epsilon);
    for (int i = 0; i < width; ++i) out[i] = scale[i] * inv * (in[i] - mean) + bias[i];
  }
}

void AddBias(float* x, int rows, int width, int ld, const std::vector<float>& bias, bool relu) {
  for (int r = 0; r < rows; ++r) {
    float* row = x + static_cast<size_t>(r) * ld;
    if (relu) {
      for (int i = 0; i < width; ++i) row[i] = std::max(row[i] + bias[i], 0.0f);
    } else {
      for (int i = 0; i < width; ++i) row[i] += bias[i];
    }
  }
}

#if defined(__x86_64__)
// GCC 12 reports the AVX-512 intrinsics' deliberately undefined pass-through operands
// (_mm512_undefined_*) as uninitialised once they are inlined here; they are never read.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"

// AVX-512 versions of the two element-wise steps (~8 % of an int8 model pass in scalar code),
// used with the AVX-512 kernel tables. AddBias gives the same floats as the scalar loop; LayerNorm
// sums in double as the scalar loop does, in 16 lanes instead of one (a different order of
// double additions: differences ~1e-16 relative, far below the reference tolerance).
__attribute__((target("avx512f"))) inline __mmask16 TailMask(int left) {
  return left >= 16 ? static_cast<__mmask16>(0xFFFF) : static_cast<__mmask16>((1u << left) - 1);
}

__attribute__((target("avx512f"))) void LayerNormAvx512(const float* x, int rows, int width,
                                                        const std::vector<float>& scale,
                                                        const std::vector<float>& bias,
                                                        float epsilon, float* y) {
  for (int r = 0; r < rows; ++r) {
    const float* in = x + static_cast<size_t>(r) * width;
    float* out = y + static_cast<size_t>(r) * width;
    __m512d lo = _mm512_setzero_pd(), hi = _mm512_setzero_pd();
    for (int i = 0; i < width; i += 16) {
      const __m512 v = _mm512_maskz_loadu_ps(TailMask(width - i), in + i);
      lo = _mm512_add_pd(lo, _mm512_cvtps_pd(_mm512_castps512_ps256(v)));
      hi = _mm512_add_pd(
          hi, _mm512_cvtps_pd(_mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(v), 1))));
    }
    const float mean = static_cast<float>(_mm512_reduce_add_pd(_mm512_add_pd(lo, hi)) / width);
    const __m512 m = _mm512_set1_ps(mean);
    lo = _mm512_setzero_pd();
    hi = _mm512_setzero_pd();
    for (int i = 0; i < width; i += 16) {
      const __mmask16 mask = TailMask(width - i);
      // Masked-off lanes load 0 and subtract to -mean: keep them at 0.
      const __m512 d = _mm512_maskz_sub_ps(mask, _mm512_maskz_loadu_ps(mask, in + i), m);
      const __m512d dlo = _mm512_cvtps_pd(_mm512_castps512_ps256(d));
      const __m512d dhi =
          _mm512_cvtps_pd(_mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(d), 1)));
      lo = _mm512_add_pd(lo, _mm512_mul_pd(dlo, dlo));
      hi = _mm512_add_pd(hi, _mm512_mul_pd(dhi, dhi));
    }
    const double sq = _mm512_reduce_add_pd(_mm512_add_pd(lo, hi));
    const __m512 inv = _mm512_set1_ps(1.0f / std::sqrt(static_cast<float>(sq / width) + epsilon));
    for (int i = 0; i < width; i += 16) {
      const __mmask16 mask = TailMask(width - i);
      const __m512 d = _mm512_sub_ps(_mm512_maskz_loadu_ps(mask, in + i), m);
      const __m512 scaled =
          _mm512_mul_ps(_mm512_mul_ps(_mm512_maskz_loadu_ps(mask, scale.data() + i), inv), d);
      _mm512_mask_storeu_ps(out + i, mask,
                            _mm512_add_ps(scaled, _mm512_maskz_loadu_ps(mask, bias.data() + i)));
    }
  }
}

__attribute__((target("avx512f"))) void AddBiasAvx512(float* x, int rows, int width, int ld,
                                                      const std::vector<float>& bias, bool relu) {
  const __m512 zero = _mm512_setzero_ps();
  for (int r = 0; r < rows; ++r) {
    float* row = x + static_cast<size_t>(r) * ld;
    for (int i = 0; i < width; i += 16) {
      const __mmask16 mask = TailMask(width - i);
      __m512 v = _mm512_add_ps(_mm512_maskz_loadu_ps(mask, row + i),
                               _mm512_maskz_loadu_ps(mask, bias.data() + i));
      if (relu) v = _mm512_max_ps(v, zero);
      _mm512_mask_storeu_ps(row + i, mask, v);
    }
  }
}

#pragma GCC diagnostic pop

// AVX2 versions of the same two steps, for the AVX2 and AVX-VNNI kernel tables (the int8 model
// pass there spent ~11 % of its time in the scalar loops). Same arithmetic as the AVX-512 ones,
// 8 float lanes and 4 double lanes; the last width % 8 columns run the scalar operations.
__attribute__((target("avx2,fma"))) inline double SumLanes(__m256d v) {
  alignas(32) double lanes[4];
  _mm256_store_pd(lanes, v);
  return (lanes[0] + lanes[1]) + (lanes[2] + lanes[3]);
}

__attribute__((target("avx2,fma"))) void LayerNormAvx2(const float* x, int rows, int width,
                                                       const std::vector<float>& scale,
                                                       const std::vector<float>& bias,
                                                       float epsilon, float* y) {
  const int full = width / 8 * 8;
  for (int r = 0; r < rows; ++r) {
    const float* in = x + static_cast<size_t>(r) * width;
    float* out = y + static_cast<size_t>(r) * width;
    __m256d lo = _mm256_setzero_pd(), hi = _mm256_setzero_pd();
    for (int i = 0; i < full; i += 8) {
      const __m256 v = _mm256_loadu_ps(in + i);
      lo = _mm256_add_pd(lo, _mm256_cvtps_pd(_mm256_castps256_ps128(v)));
      hi = _mm256_add_pd(hi, _mm256_cvtps_pd(_mm256_extractf128_ps(v, 1)));
    }
    double sum = SumLanes(_mm256_add_pd(lo, hi));
    for (int i = full; i < width; ++i) sum += in[i];
    const float mean = static_cast<float>(sum / width);
    const __m256 m = _mm256_set1_ps(mean);
    lo = _mm256_setzero_pd();
    hi = _mm256_setzero_pd();
    for (int i = 0; i < full; i += 8) {
      const __m256 d = _mm256_sub_ps(_mm256_loadu_ps(in + i), m);
      const __m256d dlo = _mm256_cvtps_pd(_mm256_castps256_ps128(d));
      const __m256d dhi = _mm256_cvtps_pd(_mm256_extractf128_ps(d, 1));
      lo = _mm256_add_pd(lo, _mm256_mul_pd(dlo, dlo));
      hi = _mm256_add_pd(hi, _mm256_mul_pd(dhi, dhi));
    }
    double sq = SumLanes(_mm256_add_pd(lo, hi));
    for (int i = full; i < width; ++i) {
      sq += static_cast<double>(in[i] - mean) * (in[i] - mean);
    }
    const float inv_scalar = 1.0f / std::sqrt(static_cast<float>(sq / width) + epsilon);
    const __m256 inv = _mm256_set1_ps(inv_scalar);
    for (int i = 0; i < full; i += 8) {
      const __m256 d = _mm256_sub_ps(_mm256_loadu_ps(in + i), m);
      const __m256 scaled = _mm256_mul_ps(_mm256_mul_ps(_mm256_loadu_ps(scale.data() + i), inv), d);
      _mm256_storeu_ps(out + i, _mm256_add_ps(scaled, _mm256_loadu_ps(bias.data() + i)));
    }
    for (int i = full; i < width; ++i) out[i] = scale[i] * inv_scalar * (in[i] - mean) + bias[i];
  }
}

__attribute__((target("avx2,fma"))) void AddBiasAvx2(float* x, int rows, int width, int ld,
                                                     const std::vector<float>& bias, bool relu) {
  const int full = width / 8 * 8;
  const __m256 zero = _mm256_setzero_ps();
  for (int r = 0; r < rows; ++r) {
    float* row = x + static_cast<size_t>(r) * ld;
    for (int i = 0; i < full; i += 8) {
      __m256 v = _mm256_add_ps(_mm256_loadu_ps(row + i), _mm256_loadu_ps(bias.data() + i));
      if (relu) v = _mm256_max_ps(v, zero);
      _mm256_storeu_ps(row + i, v);
    }
    for (int i = full; i < width; ++i) {
      row[i] = relu ? std::max(row[i] + bias[i], 0.0f) : row[i] + bias[i];
    }
  }
}
#endif  // __x86_64__

// Grows a scratch vector; capacity is kept across calls, so steady state does not allocate.
float* Ensure(std::vector<float>& v, size_t n) {
  if (v.size() < n) v.resize(n);
  return v.data();
}

}  // namespace

struct UseLiteEmbedder::Window {
  int text;        // index into the batch
  int begin;       // first token of the window in the text
  int length;      // tokens in the window
  int keep_begin;  // window-relative [keep_begin, keep_end) tokens pooled from this window
  int keep_end;
  int row;  // first row of the window in the stacked activations of its pass
};

struct UseLiteEmbedder::Scratch {
  std::vector<float> x;       // residual stream [rows x 512] (layer 0 input uses 256 columns)
  std::vector<float> input;   // layer 0 input [rows x 256]
  std::vector<float> normed;  // LayerNorm output [rows x 512]
  std::vector<float> wide;    // qkv [rows x 3*width] or FFN hidden [rows x 1536]
  std::vector<float> attn;    // combined heads [rows x width]
  std::vector<float> keys_t;  // one head's keys transposed [head_dim x tokens]
  std::vector<float> scores;  // one head's attention [tokens x tokens]
  std::vector<float> pooled;  // [texts x 512]
  std::vector<float> head;    // [texts x 512]
};

Result<std::unique_ptr<UseLiteEmbedder>> UseLiteEmbedder::Load(const std::string& model_dir,
                                                               UseLiteOptions options) {
  // nlohmann throws on type mismatches (say, a string where a shape number should be); a broken
  // model package must come back as a Status, never as an exception.
  try {
    return LoadUnchecked(model_dir, options);
  } catch (const nlohmann::json::exception& e) {
    return Status::Internal(std::string("malformed model package: ") + e.what());
  }
}

Result<std::unique_ptr<UseLiteEmbedder>> UseLiteEmbedder::LoadUnchecked(
    const std::string& model_dir, UseLiteOptions options) {
  Result<std::string> model_text = ReadFile(model_dir + "/model.json");
  if (!model_text.ok()) return model_text.status();
  // nlohmann's parse rather than ReadJson: model.json is installed with the model and trusted like
  // code (a TF.js graph a few levels deep), never uploaded.
  nlohmann::json model = nlohmann::json::parse(*model_text, nullptr, /*allow_exceptions=*/false);
  if (model.is_discarded() || !model.is_object() || !model.contains("modelTopology") ||
      !model.contains("weightsManifest")) {
    return Status::Internal("model.json is not a TF.js graph model");
  }
  ENGRAM_RETURN_IF_ERROR(CheckGraph(model["modelTopology"]));
  WeightStore w;
  ENGRAM_RETURN_IF_ERROR(w.Load(model_dir, model["weightsManifest"]));

  std::unique_ptr<UseLiteEmbedder> e(new UseLiteEmbedder());
  // bf16 and int8 products give slightly different vectors: stored vectors record it, so
  // switching precision re-embeds in the background like any model change.
  // Every int8 table gives the same products (exact integer sums, see simd_kernels.h), so one
  // suffix covers them all.
  const KernelPrecision precision =
      options.kernels != nullptr ? options.kernels->precision : KernelPrecision::kFloat32;
  const bool bf16 = precision == KernelPrecision::kBf16;
  const bool int8 = precision == KernelPrecision::kInt8;
  e->model_id_ = std::string(kModelId) + (bf16 ? "+bf16" : int8 ? "+int8" : "");
  EMBED_ASSIGN_OR_RETURN(e->tokenizer_,
                         SentencePieceTokenizer::LoadVocabJson(model_dir + "/vocab.json"));

  std::vector<int64_t> shape;
  EMBED_ASSIGN_OR_RETURN(shape, w.Shape("module/Embeddings_en"));
  if (shape.size() != 2 || shape[0] < e->tokenizer_->vocab_size() || shape[1] % 2 != 0) {
    return Status::Internal("embedding table does not fit the vocabulary");
  }
  e->embedding_rows_ = static_cast<int>(shape[0]);
  e->embedding_width_ = static_cast<int>(shape[1]);
  EMBED_ASSIGN_OR_RETURN(
      e->embedding_, w.Floats("module/Embeddings_en", static_cast<size_t>(shape[0]) * shape[1]));
  EMBED_ASSIGN_OR_RETURN(e->max_tokens_, w.IntScalar(kApply + "ClipToMaxLength/Less/y"));
  if (e->max_tokens_ <= 0) return Status::Internal("bad clip length");
  EMBED_ASSIGN_OR_RETURN(e->layer_norm_epsilon_,
                         w.FloatScalar(StackVar(1, "FFN/layer_prepostprocess/layer_norm/Cast/x")));
  EMBED_ASSIGN_OR_RETURN(
      e->l2_epsilon_,
      w.FloatScalar("module_apply_default/Encoder_en/hidden_layers/l2_normalize/Maximum/y"));

  // Position signal, as the graph computes it: float32 position * float32 inverse timescale,
  // then sin and cos (first half sin, second half cos).
  const int half = e->embedding_width_ / 2;
  std::vector<float> inv_timescale;
  EMBED_ASSIGN_OR_RETURN(
      inv_timescale,
      w.Floats(kApply + "Encode/TransformerStack/Layer_0/AddTimingSignal/TimingSignal/ExpandDims_1",
               half));
  e->timing_.resize(static_cast<size_t>(e->max_tokens_) * e->embedding_width_);
  for (int pos = 0; pos < e->max_tokens_; ++pos) {
    float* row = e->timing_.data() + static_cast<size_t>(pos) * e->embedding_width_;
    for (int i = 0; i < half; ++i) {
      const float angle = static_cast<float>(pos) * inv_timescale[i];
      row[i] = static_cast<float>(std::sin(static_cast<double>(angle)));
      row[half + i] = static_cast<float>(std::cos(static_cast<double>(angle)));
    }
  }

  ENGRAM_RETURN_IF_ERROR(LoadLayer(w, 0, e->embedding_width_, &e->layers_[0]));
  ENGRAM_RETURN_IF_ERROR(LoadLayer(w, 1, kWidth, &e->layers_[1]));
  ENGRAM_RETURN_IF_ERROR(LoadMatrix(w, "module/Encoder_en/hidden_layers/tanh_layer_0/weights",
                                    kWidth, kDimension, &e->head_));
  EMBED_ASSIGN_OR_RETURN(e->head_bias_,
                         w.Floats("module/Encoder_en/hidden_layers/tanh_layer_0/bias", kDimension));

  // The reduced-precision copies of the per-token matrices. The head runs once per text, not per
  // token: in int8 it stays float32 (the int8 kernel falls back to float32 for a matrix without
  // codes), which keeps quantisation error out of the output.
  if (bf16 || int8) {
    for (Layer& layer : e->layers_) {
      for (PackedMatrix* m :
           {&layer.qkv, &layer.out, &layer.residual, &layer.ffn_in, &layer.ffn_out}) {
        if (bf16) {
          m->AddBf16();
        } else {
          m->AddInt8();
        }
      }
    }
  }
  if (bf16) e->head_.AddBf16();

  options.window_tokens = std::clamp(options.window_tokens, 1, e->max_tokens_);
  options.window_stride = std::clamp(options.window_stride, 1, options.window_tokens);
  options.max_rows_per_pass = std::max(options.max_rows_per_pass, options.window_tokens);
  e->options_ = options;
  return e;
}

void UseLiteEmbedder::Attention(const Layer& layer, const Window* windows, int count,
                                Scratch& s) const {
  const KernelTable& k = kernels();
  const int width = layer.width;
  const int ld = 3 * width;  // qkv row: [q | k | v], each head a contiguous head_dim slice
  const int d = layer.head_dim;
  for (int w = 0; w < count; ++w) {
    const int n = windows[w].length;
    float* qkv = s.wide.data() + static_cast<size_t>(windows[w].row) * ld;
    float* keys_t = Ensure(s.keys_t, static_cast<size_t>(d) * n);
    float* scores = Ensure(s.scores, static_cast<size_t>(n) * n);
    for (int h = 0; h < layer.heads; ++h) {
      float* q = qkv + h * d;
      const float* key = qkv + width + h * d;
      const float* value = qkv + 2 * width + h * d;
      for (int t = 0; t < n; ++t) {
        float* q_row = q + static_cast<size_t>(t) * ld;
        for (int i = 0; i < d; ++i) q_row[i] *= layer.query_scale;
        const float* k_row = key + static_cast<size_t>(t) * ld;
        for (int i = 0; i < d; ++i) keys_t[static_cast<size_t>(i) * n + t] = k_row[i];
      }
      k.gemm(n, n, d, q, ld, keys_t, n, scores, n, /*accumulate=*/false);
      for (int t = 0; t < n; ++t) {
        float* row = scores + static_cast<size_t>(t) * n;
        const float max = *std::max_element(row, row + n);
        float sum = 0;
        for (int j = 0; j < n; ++j) {
          row[j] = std::exp(row[j] - max);
          sum += row[j];
        }
        const float inv = 1.0f / sum;
        for (int j = 0; j < n; ++j) row[j] *= inv;
      }
      float* out = s.attn.data() + static_cast<size_t>(windows[w].row) * width + h * d;
      k.gemm(n, d, n, scores, n, value, ld, out, width, /*accumulate=*/false);
    }
  }
}

void UseLiteEmbedder::RunWindows(const std::vector<std::vector<int>>& ids, const Window* windows,
                                 int count, float* pooled_sum, Scratch& s) const {
  const KernelTable& k = kernels();
#if defined(__x86_64__)
  const bool avx512 = k.isa == KernelIsa::kAvx512 || k.isa == KernelIsa::kAvx512Bf16 ||
                      k.isa == KernelIsa::kAvx512Int8;
  const bool avx2 = k.isa == KernelIsa::kAvx2 || k.isa == KernelIsa::kAvx2Int8 ||
                    k.isa == KernelIsa::kAvxVnniInt8;
  auto* const layer_norm = avx512 ? LayerNormAvx512 : avx2 ? LayerNormAvx2 : LayerNorm;
  auto* const add_bias = avx512 ? AddBiasAvx512 : avx2 ? AddBiasAvx2 : AddBias;
#else
  auto* const layer_norm = LayerNorm;
  auto* const add_bias = AddBias;
#endif
  int rows = 0;
  for (int w = 0; w < count; ++w) rows += windows[w].length;
  const size_t r = static_cast<size_t>(rows);
  const int in_width = embedding_width_;
  int hidden = layers_[0].ffn_in.cols();
  for (const Layer& l : layers_) hidden = std::max({hidden, l.ffn_in.cols(), 3 * l.width});
  float* x = Ensure(s.x, r * kWidth);
  float* input = Ensure(s.input, r * in_width);
  float* normed = Ensure(s.normed, r * kWidth);
  float* wide = Ensure(s.wide, r * hidden);
  Ensure(s.attn, r * kWidth);

  // Layer 0 input: embedding + (embedding + position signal), as the graph adds them.
  for (int w = 0; w < count; ++w) {
    const Window& win = windows[w];
    const std::vector<int>& text_ids = ids[win.text];
    for (int t = 0; t < win.length; ++t) {
      const float* emb =
          embedding_.data() + static_cast<size_t>(text_ids[win.begin + t]) * in_width;
      const float* pos = timing_.data() + static_cast<size_t>(t) * in_width;
      float* out = input + static_cast<size_t>(win.row + t) * in_width;
      for (int i = 0; i < in_width; ++i) out[i] = emb[i] + (emb[i] + pos[i]);
    }
  }

  for (int li = 0; li < 2; ++li) {
    const Layer& layer = layers_[li];
    const float* layer_in = li == 0 ? input : x;
    const int width = layer.width;
    // Attention block: x' = residual(x) + out(attention(LN(x))).
    layer_norm(layer_in, rows, width, layer.ln_scale, layer.ln_bias, layer_norm_epsilon_, normed);
    k.gemm_packed(rows, normed, width, layer.qkv, wide, 3 * width, false);
    add_bias(wide, rows, 3 * width, 3 * width, layer.qkv_bias, false);
    Attention(layer, windows, count, s);
    if (layer.residual.cols() > 0) {
      k.gemm_packed(rows, layer_in, width, layer.residual, x, kWidth, false);
      add_bias(x, rows, kWidth, kWidth, layer.residual_bias, false);
    }
    k.gemm_packed(rows, s.attn.data(), width, layer.out, x, kWidth, /*accumulate=*/true);
    add_bias(x, rows, kWidth, kWidth, layer.out_bias, false);
    // Feed-forward block: x' = x + W2 relu(W1 LN(x) + b1) + b2.
    const int ffn = layer.ffn_in.cols();
    layer_norm(x, rows, kWidth, layer.ffn_ln_scale, layer.ffn_ln_bias, layer_norm_epsilon_, normed);
    k.gemm_packed(rows, normed, kWidth, layer.ffn_in, wide, ffn, false);
    add_bias(wide, rows, ffn, ffn, layer.ffn_in_bias, /*relu=*/true);
    k.gemm_packed(rows, wide, ffn, layer.ffn_out, x, kWidth, /*accumulate=*/true);
    add_bias(x, rows, kWidth, kWidth, layer.ffn_out_bias, false);
  }

  for (int w = 0; w < count; ++w) {
    const Window& win = windows[w];
    float* sum = pooled_sum + static_cast<size_t>(win.text) * kWidth;
    for (int t = win.keep_begin; t < win.keep_end; ++t) {
      const float* row = x + static_cast<size_t>(win.row + t) * kWidth;
      for (int i = 0; i < kWidth; ++i) sum[i] += row[i];
    }
  }
}

std::vector<std::vector<float>> UseLiteEmbedder::Head(const float* pooled, int m,
                                                      Scratch& s) const {
  float* out = Ensure(s.head, static_cast<size_t>(m) * kDimension);
  kernels().gemm_packed(m, pooled, kWidth, head_, out, kDimension, false);
  std::vector<std::vector<float>> result(m);
  for (int i = 0; i < m; ++i) {
    float* row = out + static_cast<size_t>(i) * kDimension;
    double sq = 0;
    for (int j = 0; j < kDimension; ++j) {
      row[j] = std::tanh(row[j] + head_bias_[j]);
      sq += static_cast<double>(row[j]) * row[j];
    }
    const float inv = 1.0f / std::sqrt(std::max(static_cast<float>(sq), l2_epsilon_));
    result[i].resize(kDimension);
    for (int j = 0; j < kDimension; ++j) result[i][j] = row[j] * inv;
  }
  return result;
}

Result<std::vector<std::vector<float>>> UseLiteEmbedder::EmbedBatch(
    const std::vector<std::string>& texts) const {
  thread_local Scratch scratch;
  const int num_texts = static_cast<int>(texts.size());
  if (num_texts == 0) return std::vector<std::vector<float>>();

  std::vector<std::vector<int>> ids(num_texts);
  std::vector<int> token_count(num_texts, 0);
  std::vector<Window> windows;
  const int size = options_.window_tokens;
  const int stride = options_.window_stride;
  for (int t = 0; t < num_texts; ++t) {
    ids[t] = tokenizer_->Encode(texts[t]);
    const int n = static_cast<int>(ids[t].size());
    token_count[t] = n;
    if (n == 0) continue;
    std::vector<int> starts;
    for (int b = 0; b + size < n; b += stride) starts.push_back(b);
    starts.push_back(std::max(0, n - size));  // last window ends at the text's end
    const size_t first = windows.size();
    for (int b : starts) {
      windows.push_back(Window{t, b, std::min(size, n - b), 0, 0, 0});
    }
    // Split each overlap at its midpoint: every token pooled once, from the window that gives it
    // the most context on both sides.
    for (size_t w = first; w < windows.size(); ++w) {
      Window& win = windows[w];
      const int lo =
          w == first ? 0 : (win.begin + windows[w - 1].begin + windows[w - 1].length) / 2;
      const int hi =
          w + 1 == windows.size() ? n : (windows[w + 1].begin + win.begin + win.length) / 2;
      win.keep_begin = lo - win.begin;
      win.keep_end = hi - win.begin;
    }
  }

  float* pooled = Ensure(scratch.pooled, static_cast<size_t>(num_texts) * kWidth);
  std::fill(pooled, pooled + static_cast<size_t>(num_texts) * kWidth, 0.0f);
  // Stack windows into passes of at most max_rows_per_pass token rows.
  for (size_t first = 0; first < windows.size();) {
    size_t last = first;
    int rows = 0;
    while (last < windows.size() &&
           (last == first || rows + windows[last].length <= options_.max_rows_per_pass)) {
      windows[last].row = rows;
      rows += windows[last].length;
      ++last;
    }
    RunWindows(ids, windows.data() + first, static_cast<int>(last - first), pooled, scratch);
    first = last;
  }
  for (int t = 0; t < num_texts; ++t) {
    // Mean over tokens; the graph divides by max(length, 1), so an empty text pools to zeros.
    const float inv = 1.0f / static_cast<float>(std::max(token_count[t], 1));
    float* row = pooled + static_cast<size_t>(t) * kWidth;
    for (int i = 0; i < kWidth; ++i) row[i] *= inv;
  }
  return Head(pooled, num_texts, scratch);
}

Result<std::vector<float>> UseLiteEmbedder::EmbedTokensClipped(const std::vector<int>& ids) const {
  thread_local Scratch scratch;
  for (int id : ids) {
    if (id < 0 || id >= tokenizer_->vocab_size())
      return Status::InvalidParameter("token id out of range");
  }
  std::vector<std::vector<int>> batch = {ids};
  const int n = std::min(static_cast<int>(ids.size()), max_tokens_);
  float* pooled = Ensure(scratch.pooled, kWidth);
  std::fill(pooled, pooled + kWidth, 0.0f);
  if (n > 0) {
    Window win{0, 0, n, 0, n, 0};
    RunWindows(batch, &win, 1, pooled, scratch);
  }
  const float inv = 1.0f / static_cast<float>(std::max(n, 1));
  for (int i = 0; i < kWidth; ++i) pooled[i] *= inv;
  return std::move(Head(pooled, 1, scratch).front());
}

#undef EMBED_ASSIGN_OR_RETURN

}  // namespace engram
