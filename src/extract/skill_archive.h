// Skill archives: a ZIP (read with libarchive, from memory) holding one skill at its root or one
// skill per top-level folder. Each skill has SKILL.md (see skill_md.h), an optional _meta.json
// and resource files (scripts/, references/, assets/, ...), all kept with their paths relative to
// the skill.
//
// The archive is untrusted. Every entry is checked before anything is kept, and the first problem
// rejects the whole archive (kInvalidParameter, message naming the entry or the skill):
//   - absolute paths, "..", backslashes or empty components; symlinks, hard links, FIFOs,
//     devices and other entries that are not regular files or folders; NUL bytes in names;
//     duplicate paths (types and names are also read from the ZIP's own central directory and
//     local headers, because libarchive reports FIFOs as regular files and cuts names at a NUL);
//   - more than max_files files, or more than max_total_bytes of content. Sizes are counted from
//     the bytes actually decompressed, never from the headers, so a zip bomb stops at the limit;
//   - text that is not UTF-8 (every kept file is text: the skill model holds path -> UTF-8 text);
//   - a skill without SKILL.md, or whose front matter lacks name or description, or two skills of
//     one name; _meta.json that is not a JSON object.
// macOS "__MACOSX/" folders and ".DS_Store" files are skipped.
//
// Thread-safety: pure functions.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"
#include "extract/skill_md.h"

namespace engram {

struct SkillArchiveLimits {
  size_t max_files = 256;                  // files in the whole archive
  uint64_t max_total_bytes = 32ull << 20;  // decompressed content of the whole archive
  size_t max_path_bytes = 512;
  SkillMdLimits skill_md;
};

struct ArchiveFile {
  std::string path;  // normalised, relative, '/'-separated
  std::string content;
};

// A file path made relative and '/'-separated ("./a//b" -> "a/b"); kInvalidParameter for empty,
// absolute, "..", backslash or control-character paths, or paths over max_bytes.
Result<std::string> NormaliseSkillPath(std::string_view raw, size_t max_bytes);

// Every regular file of a ZIP archive, in archive order, after the checks above (except the
// skill-level ones).
Result<std::vector<ArchiveFile>> ReadZipArchive(std::string_view zip,
                                                const SkillArchiveLimits& limits);

struct SkillPackage {
  std::string folder;  // "" for a skill at the archive root
  ParsedSkillMd skill_md;
  std::string meta_json = "{}";              // _meta.json, when present (a JSON object)
  std::map<std::string, std::string> files;  // every file of the skill, SKILL.md included
};

// The skills of an archive, in folder order.
Result<std::vector<SkillPackage>> ParseSkillArchive(std::string_view zip,
                                                    const SkillArchiveLimits& limits);

}  // namespace engram
