// Provenance of agent memories: where a memory came from, kept beside it as a JSON object so
// that a user can audit what Engram remembers (GET memory and history show it) and the extraction
// benchmark can score it against the conversation's turns.
//
//   {"source": "extraction" | "verbatim" | "api",
//    "event_id": "me-…",              // the add event that wrote it (absent for "api")
//    "extractor": "rule-based",       // "extraction" only
//    "messages": [{"index": 0, "role": "user", "name": "Caroline",
//                  "timestamp": "2024-05-08T10:00:00.000000Z"}],
//    "edited_at": "2024-05-09T08:00:00.000000Z",   // "api" only: when the text was edited
//    "replaced": {"text": "…", "event_id": "me-…" | null}}   // after an UPDATE only
//
// "messages" are the add request's messages the memory was taken from: their index in the
// request's `messages`, role, speaker name (absent when none) and time. An UPDATE by an event
// records the fact's messages and the text it replaced; an edit through the API records
// "source": "api" and the replaced text (the messages no longer describe the edited text). Only
// one level of "replaced" is kept: the full chain is the memory's history.
//
// Thread-safety: pure functions.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "extract/memory_extractor.h"
#include "store/types.h"

namespace engram {

struct AgentMemory;

struct ProvenanceOrigin {
  std::string_view source;     // "extraction" | "verbatim"
  std::string_view event_id;   // the add event
  std::string_view extractor;  // the extractor's name; "" for verbatim memories
  // The request's messages (times already defaulted) and the indices the memory came from.
  const std::vector<ConversationMessage>* messages = nullptr;
  std::vector<int32_t> sources;
};

// The stored provenance (JSON text) of a memory an event writes; `replaced` is the memory an
// UPDATE overwrites (nullptr for an ADD).
std::string EventProvenance(const ProvenanceOrigin& origin, const AgentMemory* replaced);

// The stored provenance of a memory whose text a client edited through the API at `edited_at_us`.
std::string EditProvenance(const AgentMemory& replaced, int64_t edited_at_us);

// The provenance to render: the stored object, or null when none was recorded (memories written
// before provenance was kept) or the stored text is unreadable.
nlohmann::json ProvenanceToJson(std::string_view stored);

// When a version of a memory began to hold: the time of the latest message it was learned from
// (an event's version; its messages' times default to the add's), or of its edit through the API
// ("edited_at"), else `written_us`, when the version was written (no provenance recorded). The rule
// behind a memory's valid_from and a replaced version's valid_to (the next version's start).
int64_t VersionStartUs(std::string_view stored_provenance, int64_t written_us);
// The same from the parsed provenance (ProvenanceToJson).
int64_t ParsedVersionStartUs(const nlohmann::json& provenance, int64_t written_us);

// When the current version of a memory (AgentMemory or MemoryRecord) began: VersionStartUs of its
// provenance, written when last updated (when created, if no provenance was recorded).
template <typename Memory>
int64_t CurrentVersionStartUs(const Memory& m) {
  return VersionStartUs(m.provenance_json,
                        m.provenance_json.empty() ? m.created_at_us : m.updated_at_us);
}

// A memory's valid_from as rendered: AgentMemory::valid_from_us when set (a replaced version a
// search shows), else its current version's start, read from `provenance` (ProvenanceToJson of
// its provenance_json, which the renderer holds anyway).
int64_t ValidFromUs(const AgentMemory& m, const nlohmann::json& provenance);
int64_t ValidFromUs(const AgentMemory& m);  // parses the provenance

// When the version each entry of one memory's history wrote held (`history` oldest first). An
// ADD or UPDATE entry that changes the text begins a version, at its VersionStartUs (its time
// when written); an update that keeps the text (metadata only) continues the version before it.
// A version holds until the next one begins (never before its own start) or the memory's DELETE;
// nullopt valid_to for the current version, both nullopt for a DELETE entry.
struct VersionTime {
  std::optional<int64_t> valid_from_us;
  std::optional<int64_t> valid_to_us;
  bool begins_version = false;
};
std::vector<VersionTime> VersionTimes(const std::vector<const HistoryRecord*>& history);
std::vector<VersionTime> VersionTimes(const std::vector<HistoryRecord>& history);

// An optional time as ISO 8601 (FormatIsoMicros) or JSON null.
nlohmann::json IsoOrNull(const std::optional<int64_t>& time_us);

}  // namespace engram
