#include "extract/skill_archive.h"

#include <archive.h>
#include <archive_entry.h>
#include <fmt/format.h>

#include <memory>
#include <nlohmann/json.hpp>
#include <set>

#include "common/json_reader.h"

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
    return Invalid(
        fmt::format("archive entry {}: backslashes are not allowed in paths", Shown(raw)));
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
      return Invalid(
          fmt::format("archive entry {}: '..' (path traversal) is not allowed", Shown(raw)));
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
  const std::string_view base = slash == std::string::npos
                                    ? std::string_view(path)
                                    : std::string_view(path).substr(slash + 1);
  return base == ".DS_Store";
}

// --- What libarchive does not show: the archive's own central directory ---
//
// Two facts about an entry never reach the caller of libarchive intact, so they are read from
// the ZIP's bytes here, before libarchive reads anything:
//   - its name: libarchive keeps names as C strings (it copies a name up to its first NUL) and
//     has no call that returns the declared length, so "evil\0.txt" would arrive as "evil";
//   - its file type: libarchive turns a FIFO into a regular file (a workaround for Info-ZIP's
//     "zip -FI"), so a FIFO entry would arrive as an empty or non-empty regular file.
// The mode can come from the central directory's external attributes or from an "xl" extra
// field (central or local); every source is checked, so what libarchive ends up using is
// checked too. The walk mirrors libarchive's choice of end record (the last valid one), and the
// caller compares the number of entries libarchive returns with the directory's count.
namespace zipdir {

constexpr uint32_t kTypeMask = 0170000;
constexpr uint32_t kRegular = 0100000;
constexpr uint32_t kDirectory = 0040000;
constexpr int kUnixHost = 3;  // "version made by" high byte: the mode is in the attributes

uint16_t U16(std::string_view b, size_t at) {
  return static_cast<uint16_t>(static_cast<unsigned char>(b[at]) |
                               static_cast<unsigned char>(b[at + 1]) << 8);
}
uint32_t U32(std::string_view b, size_t at) {
  return static_cast<uint32_t>(U16(b, at)) | static_cast<uint32_t>(U16(b, at + 2)) << 16;
}
uint64_t U64(std::string_view b, size_t at) {
  return static_cast<uint64_t>(U32(b, at)) | static_cast<uint64_t>(U32(b, at + 4)) << 32;
}

Status Damaged(std::string_view why) {
  return Invalid(fmt::format("zip_base64 is not a readable ZIP archive: {}", why));
}

// The file type a Unix mode names, for messages; "" for the accepted ones.
const char* Refused(uint32_t mode) {
  switch (mode & kTypeMask) {
    case 0:  // no type: libarchive takes it for a regular file (or a folder, with a '/')
    case kRegular:
    case kDirectory:
      return "";
    case 0010000:
      return "FIFOs (named pipes) are not allowed";
    case 0020000:
      return "character devices are not allowed";
    case 0060000:
      return "block devices are not allowed";
    case 0120000:
      return "symbolic links are not allowed";
    case 0140000:
      return "sockets are not allowed";
    default:
      return "only regular files and folders are allowed";
  }
}

// Checks the modes an extra-field block can carry (libarchive reads external attributes from the
// experimental "xl" field, 0x6c78). `host` is the entry's "version made by" host, which the
// field may also set. Returns the refusal or "".
const char* CheckExtra(std::string_view extra, int host) {
  for (size_t at = 0; at + 4 <= extra.size();) {
    const uint16_t id = U16(extra, at);
    const size_t size = U16(extra, at + 2);
    if (at + 4 + size > extra.size()) break;  // libarchive stops at a truncated field too
    std::string_view data = extra.substr(at + 4, size);
    at += 4 + size;
    if (id != 0x6c78 || data.empty()) continue;
    const unsigned bitmap = static_cast<unsigned char>(data[0]);
    size_t p = 1;
    for (unsigned last = bitmap; (last & 0x80) != 0 && p < data.size(); ++p) {
      last = static_cast<unsigned char>(data[p]);
    }
    if (bitmap & 1) {
      if (p + 2 > data.size()) continue;
      host = U16(data, p) >> 8;
      p += 2;
    }
    if (bitmap & 2) p += 2;
    if ((bitmap & 4) && p + 4 <= data.size() && host == kUnixHost) {
      if (const char* why = Refused(U32(data, p) >> 16); *why) return why;
    }
  }
  return "";
}

// The central directory's position: from the last end record (searching back over a comment of
// up to 64 KiB) that passes libarchive's own checks, or its ZIP64 form when one is located.
struct Directory {
  uint64_t offset = 0;
  uint64_t size = 0;
  uint64_t entries = 0;
};

Result<Directory> FindDirectory(std::string_view zip) {
  if (zip.size() < 22) return Damaged("too short");
  const size_t lowest = zip.size() > 22 + 65535 ? zip.size() - 22 - 65535 : 0;
  for (size_t i = zip.size() - 22 + 1; i-- > lowest;) {
    if (zip.compare(i, 4, "PK\x05\x06") != 0) continue;
    Directory d{U32(zip, i + 16), U32(zip, i + 12), U16(zip, i + 10)};
    if (U16(zip, i + 4) != 0 || U16(zip, i + 6) != 0 || U16(zip, i + 8) != U16(zip, i + 10) ||
        d.offset + d.size > i) {
      continue;  // not a valid end record: keep looking, as libarchive does
    }
    if (i >= 20 && zip.compare(i - 20, 4, "PK\x06\x07") == 0) {
      const uint64_t at = U64(zip, i - 20 + 8);
      if (zip.size() < 56 || at > zip.size() - 56 || zip.compare(at, 4, "PK\x06\x06") != 0) {
        return Damaged("bad ZIP64 end of central directory");
      }
      d = {U64(zip, at + 48), U64(zip, at + 40), U64(zip, at + 32)};
      if (d.offset > at || d.size > at - d.offset) return Damaged("bad central directory");
    }
    return d;
  }
  return Damaged("no end of central directory record");
}

// The offset of an entry's local header: in the directory entry at `entry`, or, when that field
// overflowed (0xFFFFFFFF), in the ZIP64 extra field after the sizes that overflowed too.
uint64_t LocalHeaderOffset(std::string_view zip, size_t entry, std::string_view extra) {
  uint64_t local = U32(zip, entry + 42);
  if (local != 0xFFFFFFFFu) return local;
  for (size_t e = 0; e + 4 <= extra.size();) {
    const size_t size = U16(extra, e + 2);
    if (e + 4 + size > extra.size()) break;
    if (U16(extra, e) == 0x0001) {
      size_t p = e + 4;
      if (U32(zip, entry + 24) == 0xFFFFFFFFu) p += 8;  // uncompressed size
      if (U32(zip, entry + 20) == 0xFFFFFFFFu) p += 8;  // compressed size
      return p + 8 <= e + 4 + size ? U64(extra, p) : local;
    }
    e += 4 + size;
  }
  return local;
}

// Every entry's name (no NUL, in the directory and in its local header) and file type (regular
// file or folder only). Returns the number of entries, walked by the end record's count as
// libarchive walks them.
Result<uint64_t> CheckEntries(std::string_view zip, uint64_t max_entries) {
  auto dir = FindDirectory(zip);
  if (!dir.ok()) return dir.status();
  if (dir->entries > max_entries) {
    return Invalid(fmt::format("archive has more than {} entries", max_entries));
  }
  size_t at = dir->offset;
  for (uint64_t i = 0; i < dir->entries; ++i) {
    if (zip.size() < 46 || at > zip.size() - 46 || zip.compare(at, 4, "PK\x01\x02") != 0) {
      return Damaged("bad central directory entry");
    }
    const int host = U16(zip, at + 4) >> 8;
    const uint32_t attributes = U32(zip, at + 38);
    const size_t name_size = U16(zip, at + 28);
    const size_t extra_size = U16(zip, at + 30);
    const size_t comment_size = U16(zip, at + 32);
    if (at + 46 + name_size + extra_size + comment_size > zip.size()) {
      return Damaged("bad central directory entry");
    }
    const std::string_view name = zip.substr(at + 46, name_size);
    const std::string_view extra = zip.substr(at + 46 + name_size, extra_size);
    const uint64_t local = LocalHeaderOffset(zip, at, extra);
    at += 46 + name_size + extra_size + comment_size;
    if (name.find('\0') != std::string_view::npos) {
      return Invalid(
          fmt::format("archive entry {}: NUL bytes in names are not allowed", Shown(name)));
    }
    const char* why = host == kUnixHost ? Refused(attributes >> 16) : "";
    if (!*why) why = CheckExtra(extra, host);
    if (*why) return Invalid(fmt::format("archive entry {}: {}", Shown(name), why));
    // The local header: libarchive takes the name (and maybe the mode) from there.
    if (local > zip.size() || zip.size() - local < 30 || zip.compare(local, 4, "PK\x03\x04") != 0) {
      return Invalid(
          fmt::format("archive entry {}: its local header is missing (damaged ZIP)", Shown(name)));
    }
    const size_t local_name_size = U16(zip, local + 26);
    const size_t local_extra_size = U16(zip, local + 28);
    if (local + 30 + local_name_size + local_extra_size > zip.size()) {
      return Damaged("truncated local header");
    }
    const std::string_view local_name = zip.substr(local + 30, local_name_size);
    if (local_name.find('\0') != std::string_view::npos) {
      return Invalid(
          fmt::format("archive entry {}: NUL bytes in names are not allowed", Shown(local_name)));
    }
    why = CheckExtra(zip.substr(local + 30 + local_name_size, local_extra_size), host);
    if (*why) return Invalid(fmt::format("archive entry {}: {}", Shown(name), why));
  }
  return dir->entries;
}

}  // namespace zipdir

}  // namespace

Result<std::vector<ArchiveFile>> ReadZipArchive(std::string_view zip,
                                                const SkillArchiveLimits& limits) {
  // Folders and skipped entries cost little, but not nothing: bound them too.
  const uint64_t max_entries = limits.max_files * 4 + 64;
  auto directory_entries = zipdir::CheckEntries(zip, max_entries);
  if (!directory_entries.ok()) return directory_entries.status();
  std::unique_ptr<archive, ArchiveDeleter> a(archive_read_new());
  if (!a) return Status::Internal("libarchive: out of memory");
  archive_read_support_format_zip(a.get());
  if (archive_read_open_memory(a.get(), zip.data(), zip.size()) != ARCHIVE_OK) {
    return Invalid(fmt::format(
        "zip_base64 is not a readable ZIP archive: {}",
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
      return Invalid(
          fmt::format("zip_base64 is not a readable ZIP archive: {}", why ? why : "corrupt entry"));
    }
    const char* raw_path = archive_entry_pathname_utf8(entry);
    if (raw_path == nullptr) raw_path = archive_entry_pathname(entry);
    auto path = NormaliseSkillPath(raw_path ? raw_path : "", limits.max_path_bytes);
    if (!path.ok()) return path.status();
    if (++entries > max_entries) {
      return Invalid(fmt::format("archive has more than {} entries", max_entries));
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
        return Invalid(
            fmt::format("archive content exceeds {} bytes uncompressed (zip bomb protection)",
                        limits.max_total_bytes));
      }
      file.content.append(buf, static_cast<size_t>(n));
    }
    files.push_back(std::move(file));
  }
  // Had libarchive read another directory than the one checked above (or none), the counts
  // would differ: refuse rather than keep entries that were not checked.
  if (entries != *directory_entries) {
    return zipdir::Damaged("its central directory does not match its entries");
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
      // Bounded read: nesting deep enough to overflow the stack in dump() is refused here.
      const JsonReadLimits meta_limits{.what = "_meta.json",
                                       .max_bytes = limits.max_total_bytes,
                                       .max_depth = 64,
                                       .refuse_duplicate_keys = true};
      auto j = ReadJson(meta->second, meta_limits);
      if (!j.ok()) return Invalid(fmt::format("{}: {}", who, j.status().message()));
      if (!j->is_object()) return Invalid(fmt::format("{}: _meta.json must be a JSON object", who));
      p.meta_json = DumpJson(*j);
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
