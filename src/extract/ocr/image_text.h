// ImageTextExtractor: the text shown in an image (OCR with tesseract, English data from Debian's
// tesseract-ocr-eng), so images in memories can be found by the words they show.
//
// Bounded: image dimensions are read from the header before decoding (larger than max_pixels →
// error, so a decompression bomb is never decoded), and recognition stops at the deadline
// (tesseract's ETEXT_DESC monitor). A corrupt image is an error for that image only.
//
// Thread-safety: Extract is safe to call concurrently. Tesseract engines are pooled, one engine
// serves one call at a time, and at most max_engines exist: further calls wait for one (each
// engine holds the language model, so their number bounds memory).
#pragma once

#include <chrono>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "common/mutex.h"
#include "common/status.h"

namespace tesseract {
class TessBaseAPI;
}

namespace engram {

struct OcrOptions {
  std::string
      tessdata_dir;  // empty: tesseract's default (Debian: /usr/share/tesseract-ocr/5/tessdata)
  std::string language = "eng";
  std::chrono::milliseconds timeout{5000};  // per image
  int64_t max_pixels = 40'000'000;
  size_t max_engines = 2;  // concurrent recognitions at most (each engine holds ~30 MB)
};

class ImageTextExtractor {
 public:
  // Loads the language data once to fail early (kUnavailable when it is missing).
  static Result<std::unique_ptr<ImageTextExtractor>> Create(OcrOptions options);
  ~ImageTextExtractor();

  // Recognised text, whitespace-normalised ("" when the image shows none). kInvalidParameter for
  // an undecodable or oversized image, kUnavailable when recognition hit the deadline.
  Result<std::string> Extract(std::string_view image_bytes) const;

 private:
  explicit ImageTextExtractor(OcrOptions options);
  Result<std::unique_ptr<tesseract::TessBaseAPI>> TakeEngine() const;
  void ReturnEngine(std::unique_ptr<tesseract::TessBaseAPI> engine) const;

  OcrOptions options_;
  mutable Mutex mu_;
  mutable CondVar returned_;
  mutable std::vector<std::unique_ptr<tesseract::TessBaseAPI>> idle_ GUARDED_BY(mu_);
  mutable size_t engines_ GUARDED_BY(mu_) = 0;  // engines created (idle or in use)
};

}  // namespace engram
