// Builds ZIP archives in memory with libarchive's writer, for tests of skill imports: regular
// files (deflated), folders and symbolic links, with any path (hostile ones included).
// Header-only; link LibArchive::LibArchive.
#pragma once

#include <archive.h>
#include <archive_entry.h>

#include <string>
#include <vector>

namespace engram::testing {

struct ZipEntry {
  enum class Kind { kFile, kDir, kSymlink };
  std::string path;
  std::string content;  // kSymlink: the link target
  Kind kind = Kind::kFile;
};

inline std::string MakeZip(const std::vector<ZipEntry>& entries) {
  std::string out;
  archive* a = archive_write_new();
  archive_write_set_format_zip(a);
  archive_write_open(
      a, &out, nullptr,
      [](archive*, void* data, const void* buf, size_t n) -> la_ssize_t {
        static_cast<std::string*>(data)->append(static_cast<const char*>(buf), n);
        return static_cast<la_ssize_t>(n);
      },
      nullptr);
  for (const ZipEntry& e : entries) {
    archive_entry* entry = archive_entry_new();
    archive_entry_set_pathname(entry, e.path.c_str());
    archive_entry_set_mtime(entry, 1700000000, 0);
    switch (e.kind) {
      case ZipEntry::Kind::kFile:
        archive_entry_set_filetype(entry, AE_IFREG);
        archive_entry_set_perm(entry, 0644);
        archive_entry_set_size(entry, static_cast<la_int64_t>(e.content.size()));
        break;
      case ZipEntry::Kind::kDir:
        archive_entry_set_filetype(entry, AE_IFDIR);
        archive_entry_set_perm(entry, 0755);
        break;
      case ZipEntry::Kind::kSymlink:
        archive_entry_set_filetype(entry, AE_IFLNK);
        archive_entry_set_perm(entry, 0777);
        archive_entry_set_symlink(entry, e.content.c_str());
        break;
    }
    archive_write_header(a, entry);
    if (e.kind == ZipEntry::Kind::kFile && !e.content.empty()) {
      archive_write_data(a, e.content.data(), e.content.size());
    }
    archive_entry_free(entry);
  }
  archive_write_close(a);
  archive_write_free(a);
  return out;
}

// A SKILL.md with the given front matter lines (e.g. "name: x") and body.
inline std::string SkillMd(const std::vector<std::string>& front, const std::string& body = "Steps.\n") {
  std::string s = "---\n";
  for (const auto& l : front) s += l + "\n";
  return s + "---\n" + body;
}

}  // namespace engram::testing
