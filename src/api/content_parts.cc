#include "api/content_parts.h"

#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include "api/json_input.h"
#include "common/codec.h"

namespace engram {

std::optional<std::string> DetectImageMime(std::string_view b) {
  auto starts = [&](std::string_view magic, size_t at = 0) {
    return b.size() >= at + magic.size() && b.substr(at, magic.size()) == magic;
  };
  if (starts("\x89PNG\r\n\x1a\n")) return "image/png";
  if (starts("\xFF\xD8\xFF")) return "image/jpeg";
  if (starts("GIF87a") || starts("GIF89a")) return "image/gif";
  if (starts("RIFF") && starts("WEBP", 8)) return "image/webp";
  return std::nullopt;
}

namespace {

// Decodes "data:<mime>;base64,<data>" or bare base64 into image bytes at `path`.
Result<ImageBlob> DecodeImage(const std::string& ref, const std::string& path,
                              const ContentLimits& limits) {
  std::string_view data = ref;
  if (data.rfind("http://", 0) == 0 || data.rfind("https://", 0) == 0) {
    return Status::InvalidParameter(fmt::format(
        "{}: remote image URLs are not fetched; send the image as a base64 data URL", path));
  }
  if (data.rfind("data:", 0) == 0) {
    size_t comma = data.find(',');
    if (comma == std::string_view::npos) {
      return Status::InvalidParameter(fmt::format("{} is a data URL without a comma", path));
    }
    std::string_view meta = data.substr(5, comma - 5);
    if (meta.size() < 7 || meta.substr(meta.size() - 7) != ";base64") {
      return Status::InvalidParameter(fmt::format("{} must be a base64 data URL", path));
    }
    data = data.substr(comma + 1);
  }
  if (data.empty()) return Status::InvalidParameter(fmt::format("{} has no image data", path));
  auto bytes = Base64Decode(data, limits.max_image_bytes);
  if (!bytes) {
    // Either not base64 or too large; say which.
    if (data.size() / 4 * 3 > limits.max_image_bytes + 3) {
      return Status::PayloadTooLarge(
          fmt::format("{}: image larger than {} bytes", path, limits.max_image_bytes));
    }
    return Status::InvalidParameter(fmt::format("{} is not valid base64", path));
  }
  auto mime = DetectImageMime(*bytes);
  if (!mime) {
    return Status::InvalidParameter(fmt::format("{} is not a PNG, JPEG, WebP or GIF image", path));
  }
  ImageBlob blob;
  blob.sha256 = Sha256Hex(*bytes);
  blob.mime = *mime;
  blob.bytes = std::move(*bytes);
  return blob;
}

}  // namespace

Result<std::vector<ContentPart>> ParseContentParts(const nlohmann::json& parts,
                                                   const std::string& path,
                                                   const ContentLimits& limits,
                                                   ImageCollector* images, bool allow_blank) {
  if (!parts.is_array()) return Status::InvalidParameter(path + " must be an array");
  if (parts.empty() && !allow_blank) return Status::InvalidParameter(path + " must not be empty");
  if (parts.size() > limits.max_parts) {
    return Status::InvalidParameter(
        fmt::format("{} has {} parts, at most {} allowed", path, parts.size(), limits.max_parts));
  }
  std::vector<ContentPart> out;
  bool any_content = false;
  for (size_t i = 0; i < parts.size(); ++i) {
    const std::string p = fmt::format("{}[{}]", path, i);
    const auto& part = parts[i];
    if (!part.is_object()) return Status::InvalidParameter(p + " must be an object");
    auto type = GetString(part, "type", p + ".type", {.max_bytes = 32});
    if (!type.ok()) return type.status();
    ContentPart cp;
    if (**type == "text") {
      auto text = GetString(part, "text", p + ".text",
                            {.allow_empty = true, .max_bytes = limits.max_text_bytes});
      if (!text.ok()) return text.status();
      cp.text = **text;
      if (!IsBlank(cp.text)) any_content = true;
    } else if (**type == "image_url" || **type == "image") {
      std::string ref;
      std::string field = p + "." + **type;
      auto it = part.find(**type);
      if (it == part.end() || it->is_null()) {
        return Status::InvalidParameter(field + " is required");
      }
      if (it->is_string()) {
        ref = it->get<std::string>();
      } else if (it->is_object() && **type == "image_url") {
        auto url = GetString(*it, "url", field + ".url", {.max_bytes = SIZE_MAX});
        if (!url.ok()) return url.status();
        ref = **url;
        field += ".url";
      } else {
        return Status::InvalidParameter(field + " must be a string or an object with url");
      }
      auto blob = DecodeImage(ref, field, limits);
      if (!blob.ok()) return blob.status();
      cp.is_image = true;
      cp.image_sha256 = blob->sha256;
      cp.image_mime = blob->mime;
      if (!images->by_hash.count(blob->sha256)) {
        images->total_bytes += blob->bytes.size();
        if (images->total_bytes > limits.max_total_image_bytes) {
          return Status::PayloadTooLarge(fmt::format(
              "images in this request exceed {} bytes in total", limits.max_total_image_bytes));
        }
        images->by_hash.emplace(blob->sha256, std::move(*blob));
      }
      any_content = true;
    } else {
      return Status::InvalidParameter(
          fmt::format("{}.type must be one of text, image_url, image; got \"{}\"", p, **type));
    }
    out.push_back(std::move(cp));
  }
  if (!any_content && !allow_blank) {
    return Status::InvalidParameter(path + " has no text and no image");
  }
  return out;
}

}  // namespace engram
