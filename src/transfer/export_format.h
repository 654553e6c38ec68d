// The export format (docs/export-format.md): JSON Lines, a header line and then one line per
// record, each a JSON object with a "type". This file turns store records into lines and lines
// back into records, checking every field; the exporter and the importer only sequence them.
//
// Thread-safety: pure functions.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "common/status.h"
#include "store/kb_types.h"
#include "store/skill_types.h"
#include "store/transfer_store.h"
#include "store/types.h"

namespace engram::transfer {

inline constexpr std::string_view kFormat = "engram-export";
inline constexpr int kFormatVersion = 1;

struct ExportHeader {
  int version = kFormatVersion;
  std::string engram_version;
  std::string created_at;  // RFC 3339, UTC
  bool vectors = true;     // whether records carry their vectors
};

struct KbDocumentItem {
  KbDocRecord doc;                    // content included
  std::vector<KbChunkRecord> chunks;  // by position
};
struct SkillItem {
  SkillRecord skill;
  std::vector<SkillVersionRecord> versions;  // oldest first
};

// One decoded line after the header.
using ExportItem = std::variant<ImageBlob, MemoryRecord /* a Leaderboard message */,
                                AgentMemoryImport, SkillItem, KbDocumentItem>;

nlohmann::json EncodeHeader(const ExportHeader& header);
nlohmann::json EncodeImage(const ImageBlob& image);
// `vectors` false leaves the record's vector out.
nlohmann::json EncodeMessage(const MemoryRecord& message, bool vectors);
nlohmann::json EncodeAgentMemory(const AgentMemoryImport& memory, bool vectors);
nlohmann::json EncodeSkill(const SkillItem& skill, bool vectors);
nlohmann::json EncodeKbDocument(const KbDocumentItem& doc, bool vectors);

// kInvalidParameter naming the field when the line is not a header of a version this binary
// reads.
Result<ExportHeader> DecodeHeader(const nlohmann::json& line);
// kInvalidParameter naming the field ("memory.history[1].at_us: expected an integer") when a
// line is not a valid record.
Result<ExportItem> DecodeItem(const nlohmann::json& line);

}  // namespace engram::transfer
