// Builds ZIP archives in memory with libarchive's writer, for tests of skill imports: regular
// files (deflated), folders and symbolic links, with any path (hostile ones included). MakeRawZip
// writes the bytes itself, for entries libarchive's writer refuses to make.
// Header-only; link LibArchive::LibArchive.
#pragma once

#include <archive.h>
#include <archive_entry.h>

#include <cstdint>
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

// An entry of MakeRawZip: any bytes in the name (NUL included) and any Unix mode.
struct RawZipEntry {
  std::string name;
  std::string content;
  // st_mode, kept in the external attributes of an entry "made by" Unix: 0100644 a regular file,
  // 0010644 a FIFO, 0020644 / 0060644 a character / block device, 0120777 a symbolic link.
  uint32_t mode = 0100644;
};

inline uint32_t ZipCrc32(const std::string& data) {
  uint32_t crc = 0xFFFFFFFFu;
  for (unsigned char c : data) {
    crc ^= c;
    for (int k = 0; k < 8; ++k) crc = (crc >> 1) ^ (0xEDB88320u & (0u - (crc & 1u)));
  }
  return ~crc;
}

// A ZIP archive written byte by byte: stored (uncompressed) entries, each with a local header
// and a central directory entry holding the same name, then the end record.
inline std::string MakeRawZip(const std::vector<RawZipEntry>& entries) {
  auto u16 = [](std::string& out, uint32_t v) {
    out += static_cast<char>(v & 0xFF);
    out += static_cast<char>((v >> 8) & 0xFF);
  };
  auto u32 = [&u16](std::string& out, uint32_t v) {
    u16(out, v & 0xFFFF);
    u16(out, v >> 16);
  };
  std::string out;
  std::string directory;
  for (const RawZipEntry& e : entries) {
    const uint32_t offset = static_cast<uint32_t>(out.size());
    const uint32_t crc = ZipCrc32(e.content);
    const auto size = static_cast<uint32_t>(e.content.size());
    const auto name_size = static_cast<uint32_t>(e.name.size());
    out += "PK\x03\x04";
    u16(out, 20);    // version needed
    u16(out, 0);     // flags
    u16(out, 0);     // stored
    u16(out, 0);     // time
    u16(out, 0x21);  // date: 1980-01-01
    u32(out, crc);
    u32(out, size);
    u32(out, size);
    u16(out, name_size);
    u16(out, 0);  // extra
    out += e.name;
    out += e.content;
    directory += "PK\x01\x02";
    u16(directory, 3 << 8 | 20);  // made by Unix
    u16(directory, 20);
    u16(directory, 0);
    u16(directory, 0);
    u16(directory, 0);
    u16(directory, 0x21);
    u32(directory, crc);
    u32(directory, size);
    u32(directory, size);
    u16(directory, name_size);
    u16(directory, 0);  // extra
    u16(directory, 0);  // comment
    u16(directory, 0);  // disk
    u16(directory, 0);  // internal attributes
    u32(directory, e.mode << 16);
    u32(directory, offset);
    directory += e.name;
  }
  const auto directory_offset = static_cast<uint32_t>(out.size());
  out += directory;
  out += "PK\x05\x06";
  u16(out, 0);
  u16(out, 0);
  u16(out, static_cast<uint32_t>(entries.size()));
  u16(out, static_cast<uint32_t>(entries.size()));
  u32(out, static_cast<uint32_t>(directory.size()));
  u32(out, directory_offset);
  u16(out, 0);  // comment
  return out;
}

// A SKILL.md with the given front matter lines (e.g. "name: x") and body.
inline std::string SkillMd(const std::vector<std::string>& front,
                           const std::string& body = "Steps.\n") {
  std::string s = "---\n";
  for (const auto& l : front) s += l + "\n";
  return s + "---\n" + body;
}

}  // namespace engram::testing
