// OCR of the images sent with Leaderboard adds.
#include "config/settings/settings.h"

namespace engram {

std::vector<OptionSpec> OcrSettings() {
  // clang-format off
  return {
      {.name = "ocr", .field = &ServeOptions::ocr, .help = "read the text in Leaderboard images (tesseract) so searches find it (--no-ocr: off)"},
      {.name = "ocr-timeout-ms", .field = &ServeOptions::ocr_timeout_ms, .help = "OCR time per image", .tier = OptionTier::kAdvanced, .min = 100, .max = 600000},
  };
  // clang-format on
}

}  // namespace engram
