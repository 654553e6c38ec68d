#include "extract/skill_archive.h"

#include <archive.h>
#include <archive_entry.h>
#include <fmt/format.h>

#include <memory>
#include <nlohmann/json.hpp>
#include <set>

namespace engram {

namespace {

struct ArchiveDeleter {
  void operator()(archive* a) const { archive_read_free(a); }
};

Status Invalid(std::string message) { return Status::InvalidParameter(std::move(message)); }

// Printable form of an untrusted path for messages: bounded, control bytes replaced.
std::string Shown(std::string_view path) {
  std::string out;
  for (char c : path.substr(0, 200)) out += (static_cast<unsigned char>(c) < 0x20) ? '?' : c;
  if (path.size() > 200) out += "...";
  return out;
}

}  // namespace

Result<std::string> NormaliseSkillPath(std::string_view raw, size_t max_bytes) {
  if (raw.empty()) return Invalid("archive entry has an empty path");
  if (raw.size() > max_bytes) {
    return Invalid(fmt::format("archive entry path is longer than {} bytes", max_bytes));
  }
  if (!IsValidUtf8(raw)) return Invalid("archive entry path is not valid UTF-8");
  if (raw.find('\\') != std::string_view::npos) {
    return Invalid(fmt::format("archive entry {}: backslashes are not allowed in paths", Shown(raw)));
  }
  if (raw.front() == '/' || (raw.size() >= 2 && raw[1] == ':')) {
    return Invalid(fmt::format("archive entry {}: absolute paths are not allowed", Shown(raw)));
  }
  std::string out;
  size_t from = 0;
  while (from <= raw.size()) {
    size_t slash = raw.find('/', from);
    if (slash == std::string_view::npos) slash = raw.size();
    std::string_view part = raw.substr(from, slash - from);
    from = slash + 1;
    if (part.empty() || part == ".") continue;  // "a//b", "./a", trailing '/' of folders
    if (part == "..") {
      return Invalid(fmt::format("archive entry {}: '..' (path traversal) is not allowed", Shown(raw)));
    }
    for (char c : part) {
      if (static_cast<unsigned char>(c) < 0x20) {
        return Invalid(fmt::format("archive entry {}: control characters in path", Shown(raw)));
      }
    }
    if (!out.empty()) out += '/';
    out += part;
  }
  return out;
}

namespace {

bool Skipped(const std::string& path) {
  if (path.rfind("__MACOSX/", 0) == 0 || path == "__MACOSX") return true;
  const size_t slash = path.rfind('/');
  const std::string_view base =
      slash == std::string::npos ? std::string_view(path) : std::string_view(path).substr(slash + 1);
  return base == ".DS_Store";
}

}  // namespace

Result<std::vector<ArchiveFile>> ReadZipArchive(std::string_view zip,
                                                const SkillArchiveLimits& limits) {
  std::unique_ptr<archive, ArchiveDeleter> a(archive_read_new());
  if (!a) return Status::Internal("libarchive: out of memory");
  archive_read_support_format_zip(a.get());
  if (archive_read_open_memory(a.get(), zip.data(), zip.size()) != ARCHIVE_OK) {
    return Invalid(fmt::format("zip_base64 is not a readable ZIP archive: {}",
                               archive_error_string(a.get()) ? archive_error_string(a.get()) : "unknown error"));
  }
  std::vector<ArchiveFile> files;
  std::set<std::string> seen;
  uint64_t total = 0;
  size_t entries = 0;
  archive_entry* entry = nullptr;
  for (;;) {
    int rc = archive_read_next_header(a.get(), &entry);
    if (rc == ARCHIVE_EOF) break;
    if (rc != ARCHIVE_OK && rc != ARCHIVE_WARN) {
      const char* why = archive_error_string(a.get());
      return Invalid(fmt::format("zip_base64 is not a readable ZIP archive: {}", why ? why : "corrupt entry"));
    }
    const char* raw_path = archive_entry_pathname_utf8(entry);
    if (raw_path == nullptr) raw_path = archive_entry_pathname(entry);
    auto path = NormaliseSkillPath(raw_path ? raw_path : "", limits.max_path_bytes);
    if (!path.ok()) return path.status();
    // Folders and skipped entries cost little, but not nothing: bound them too.
    if (++entries > limits.max_files * 4 + 64) {
      return Invalid(fmt::format("archive has more than {} entries", limits.max_files * 4 + 64));
    }
    const mode_t type = archive_entry_filetype(entry);
    if (type == AE_IFDIR) continue;
    if (archive_entry_hardlink(entry) != nullptr) {
      return Invalid(fmt::format("archive entry {}: hard links are not allowed", Shown(*path)));
    }
    if (type == AE_IFLNK || archive_entry_symlink(entry) != nullptr) {
      return Invalid(fmt::format("archive entry {}: symbolic links are not allowed", Shown(*path)));
    }
    if (type != AE_IFREG) {
      return Invalid(fmt::format("archive entry {}: only regular files are allowed", Shown(*path)));
    }
    if (Skipped(*path)) continue;
    if (path->empty()) return Invalid("archive entry has an empty path");
    if (!seen.insert(*path).second) {
      return Invalid(fmt::format("archive entry {} appears twice", Shown(*path)));
    }
    if (files.size() + 1 > limits.max_files) {
      return Invalid(fmt::format("archive has more than {} files", limits.max_files));
    }
    // Read what is really there, whatever the header claims, and stop at the limit.
    ArchiveFile file{*path, {}};
    char buf[64 << 10];
    for (;;) {
      la_ssize_t n = archive_read_data(a.get(), buf, sizeof buf);
      if (n == 0) break;
      if (n < 0) {
        const char* why = archive_error_string(a.get());
        return Invalid(fmt::format("archive entry {} cannot be read: {}", Shown(*path),
                                   why ? why : "corrupt data"));
      }
      total += static_cast<uint64_t>(n);
      if (total > limits.max_total_bytes) {
        return Invalid(fmt::format(
            "archive content exceeds {} bytes uncompressed (zip bomb protection)",
            limits.max_total_bytes));
      }
      file.content.append(buf, static_cast<size_t>(n));
    }
    files.push_back(std::move(file));
  }
  if (files.empty()) return Invalid("zip_base64: the archive contains no files");
  return files;
}

Result<std::vector<SkillPackage>> ParseSkillArchive(std::string_view zip,
                                                    const SkillArchiveLimits& limits) {
  auto files = ReadZipArchive(zip, limits);
  if (!files.ok()) return files.status();
  // One skill at the root when SKILL.md is there, else one per top-level folder.
  bool at_root = false;
  for (const auto& f : *files) at_root = at_root || f.path == "SKILL.md";
  std::map<std::string, std::map<std::string, std::string>> by_folder;
  for (auto& f : *files) {
    if (at_root) {
      by_folder[""].emplace(f.path, std::move(f.content));
      continue;
    }
    const size_t slash = f.path.find('/');
    if (slash == std::string::npos) continue;  // a loose file next to skill folders (README...)
    by_folder[f.path.substr(0, slash)].emplace(f.path.substr(slash + 1), std::move(f.content));
  }
  if (by_folder.empty()) {
    return Invalid("archive has no SKILL.md at its root and no skill folders");
  }
  std::vector<SkillPackage> out;
  std::map<std::string, std::string> folder_of_name;
  for (auto& [folder, skill_files] : by_folder) {
    const std::string who = folder.empty() ? "skill at the archive root"
                                           : fmt::format("skill folder '{}'", Shown(folder));
    auto md = skill_files.find("SKILL.md");
    if (md == skill_files.end()) return Invalid(fmt::format("{}: SKILL.md is missing", who));
    for (const auto& [path, content] : skill_files) {
      // NUL bytes mean binary content (and text stores cannot hold them).
      if (!IsValidUtf8(content) || content.find('\0') != std::string::npos) {
        return Invalid(fmt::format("{}: {} is not UTF-8 text", who, Shown(path)));
      }
    }
    auto parsed = ParseSkillMd(md->second, limits.skill_md);
    if (!parsed.ok()) return Invalid(fmt::format("{}: {}", who, parsed.status().message()));
    SkillPackage p;
    p.folder = folder;
    p.skill_md = std::move(*parsed);
    if (auto meta = skill_files.find("_meta.json"); meta != skill_files.end()) {
      auto j = nlohmann::json::parse(meta->second, nullptr, false);
      if (!j.is_object()) return Invalid(fmt::format("{}: _meta.json must be a JSON object", who));
      p.meta_json = j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
    }
    auto [it, fresh] = folder_of_name.emplace(p.skill_md.front.name, folder);
    if (!fresh) {
      return Invalid(fmt::format("{}: another skill of the archive is also named '{}'", who,
                                 Shown(p.skill_md.front.name)));
    }
    p.files = std::move(skill_files);
    out.push_back(std::move(p));
  }
  return out;
}

}  // namespace engram
