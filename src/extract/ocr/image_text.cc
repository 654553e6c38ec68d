#include "extract/ocr/image_text.h"

#include <fmt/format.h>
#include <leptonica/allheaders.h>
#include <tesseract/baseapi.h>
#include <tesseract/ocrclass.h>

#include <algorithm>

namespace engram {

namespace {

struct PixFree {
  void operator()(Pix* p) const { pixDestroy(&p); }
};

std::string CollapseWhitespace(const char* text) {
  std::string out;
  bool space = false;
  for (const char* p = text; *p != '\0'; ++p) {
    const char c = *p;
    if (c == ' ' || c == '\n' || c == '\t' || c == '\r' || c == '\f') {
      space = !out.empty();
      continue;
    }
    if (space) out += ' ';
    space = false;
    out += c;
  }
  return out;
}

}  // namespace

ImageTextExtractor::ImageTextExtractor(OcrOptions options) : options_(std::move(options)) {}
ImageTextExtractor::~ImageTextExtractor() = default;

Result<std::unique_ptr<ImageTextExtractor>> ImageTextExtractor::Create(OcrOptions options) {
  setMsgSeverity(L_SEVERITY_NONE);  // leptonica would print to stderr for every bad image
  std::unique_ptr<ImageTextExtractor> ocr(new ImageTextExtractor(std::move(options)));
  auto engine = ocr->TakeEngine();
  if (!engine.ok()) return engine.status();
  ocr->ReturnEngine(std::move(*engine));
  return ocr;
}

Result<std::unique_ptr<tesseract::TessBaseAPI>> ImageTextExtractor::TakeEngine() const {
  {
    MutexLock lock(&mu_);
    while (idle_.empty() && engines_ >= std::max<size_t>(1, options_.max_engines)) {
      returned_.Wait(&mu_);
    }
    if (!idle_.empty()) {
      auto engine = std::move(idle_.back());
      idle_.pop_back();
      return engine;
    }
    ++engines_;  // reserved; created below without holding the lock
  }
  auto engine = std::make_unique<tesseract::TessBaseAPI>();
  const char* datapath = options_.tessdata_dir.empty() ? nullptr : options_.tessdata_dir.c_str();
  if (engine->Init(datapath, options_.language.c_str(), tesseract::OEM_DEFAULT) != 0) {
    {
      MutexLock lock(&mu_);
      --engines_;
    }
    returned_.Signal();
    return Status::Unavailable(
        fmt::format("OCR: cannot load tesseract language data '{}' (install tesseract-ocr-eng)",
                    options_.language));
  }
  engine->SetPageSegMode(tesseract::PSM_AUTO);
  return engine;
}

void ImageTextExtractor::ReturnEngine(std::unique_ptr<tesseract::TessBaseAPI> engine) const {
  {
    MutexLock lock(&mu_);
    idle_.push_back(std::move(engine));
  }
  returned_.Signal();
}

Result<std::string> ImageTextExtractor::Extract(std::string_view image_bytes) const {
  const auto* data = reinterpret_cast<const l_uint8*>(image_bytes.data());
  l_int32 format = 0, w = 0, h = 0, bps = 0, spp = 0, cmap = 0;
  if (image_bytes.empty() ||
      pixReadHeaderMem(data, image_bytes.size(), &format, &w, &h, &bps, &spp, &cmap) != 0) {
    return Status::InvalidParameter("OCR: the image cannot be decoded");
  }
  if (w <= 0 || h <= 0 || static_cast<int64_t>(w) * h > options_.max_pixels) {
    return Status::InvalidParameter(fmt::format("OCR: the image is too large ({}x{})", w, h));
  }
  std::unique_ptr<Pix, PixFree> pix(pixReadMem(data, image_bytes.size()));
  if (!pix) return Status::InvalidParameter("OCR: the image cannot be decoded");
  auto engine = TakeEngine();
  if (!engine.ok()) return engine.status();
  (*engine)->SetImage(pix.get());
  tesseract::ETEXT_DESC monitor;
  monitor.set_deadline_msecs(static_cast<int32_t>(options_.timeout.count()));
  const int rc = (*engine)->Recognize(&monitor);
  if (rc != 0 || monitor.deadline_exceeded()) {
    (*engine)->Clear();
    ReturnEngine(std::move(*engine));
    return Status::Unavailable(
        fmt::format("OCR: recognition stopped after {} ms", options_.timeout.count()));
  }
  std::unique_ptr<char[]> text((*engine)->GetUTF8Text());
  (*engine)->Clear();
  ReturnEngine(std::move(*engine));
  return text ? CollapseWhitespace(text.get()) : std::string();
}

}  // namespace engram
