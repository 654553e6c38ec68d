#include "embed/embed_command.h"

#include <charconv>
#include <memory>

#include "embed/simd_kernels.h"
#include "embed/use_lite.h"

namespace engram {
namespace {

// Shortest text that reads back as the same float (std::to_chars), so printed vectors round-trip
// exactly and stay short.
void WriteFloat(std::ostream& out, float v) {
  char buf[32];
  auto [end, ec] = std::to_chars(buf, buf + sizeof(buf), v);
  if (ec != std::errc()) {
    out << v;
    return;
  }
  out.write(buf, end - buf);
}

}  // namespace

int RunEmbedCommand(const std::string& model_dir, const std::vector<std::string>& texts,
                    bool similarity, std::ostream& out, std::ostream& err) {
  if (texts.empty()) {
    err << "embed: give at least one text\n";
    return 2;
  }
  if (similarity && texts.size() != 2) {
    err << "embed: --similarity needs exactly two texts\n";
    return 2;
  }
  Result<std::unique_ptr<UseLiteEmbedder>> model = UseLiteEmbedder::Load(model_dir);
  if (!model.ok()) {
    err << "embed: cannot load model from " << model_dir << ": " << model.status().ToString()
        << "\n";
    return 1;
  }
  Result<std::vector<std::vector<float>>> vectors = (*model)->EmbedBatch(texts);
  if (!vectors.ok()) {
    err << "embed: " << vectors.status().ToString() << "\n";
    return 1;
  }
  if (similarity) {
    const auto& v = *vectors;
    WriteFloat(out, Cosine(v[0].data(), v[1].data(), static_cast<int>(v[0].size())));
    out << "\n";
    return 0;
  }
  for (const std::vector<float>& v : *vectors) {
    out << '[';
    for (size_t i = 0; i < v.size(); ++i) {
      if (i > 0) out << ',';
      WriteFloat(out, v[i]);
    }
    out << "]\n";
  }
  return 0;
}

}  // namespace engram
