#include "core/memory_provenance.h"

#include <algorithm>
#include <optional>

#include "common/json_reader.h"
#include "common/time_util.h"
#include "core/memory_shard.h"

namespace engram {
namespace {

using json = nlohmann::json;

std::string Dump(const json& j) {
  // Names come from clients: invalid UTF-8 becomes U+FFFD rather than make dump() throw.
  return j.dump(-1, ' ', /*ensure_ascii=*/false, json::error_handler_t::replace);
}

// The one level of "replaced" kept: the old text and the event that wrote it, if known.
json Replaced(const AgentMemory& old) {
  json event_id = nullptr;
  const json before = ProvenanceToJson(old.provenance_json);
  if (before.is_object()) {
    auto it = before.find("event_id");
    if (it != before.end() && it->is_string()) event_id = *it;
  }
  return {{"text", old.text}, {"event_id", std::move(event_id)}};
}

}  // namespace

std::string EventProvenance(const ProvenanceOrigin& origin, const AgentMemory* replaced) {
  json messages = json::array();
  if (origin.messages != nullptr) {
    for (int32_t i : origin.sources) {
      if (i < 0 || static_cast<size_t>(i) >= origin.messages->size()) continue;
      const ConversationMessage& m = (*origin.messages)[i];
      json item = {{"index", i}, {"role", m.role}};
      if (!m.name.empty()) item["name"] = m.name;
      item["timestamp"] = FormatIsoMicros(m.time_us);
      messages.push_back(std::move(item));
    }
  }
  json p = {{"source", origin.source}, {"event_id", origin.event_id}};
  if (!origin.extractor.empty()) p["extractor"] = origin.extractor;
  p["messages"] = std::move(messages);
  if (replaced != nullptr) p["replaced"] = Replaced(*replaced);
  return Dump(p);
}

std::string EditProvenance(const AgentMemory& replaced, int64_t edited_at_us) {
  return Dump({{"source", "api"},
               {"edited_at", FormatIsoMicros(edited_at_us)},
               {"replaced", Replaced(replaced)}});
}

json ProvenanceToJson(std::string_view stored) {
  if (stored.empty()) return nullptr;
  json j = ReadJsonOrDiscarded(stored, kStoredJsonLimits);
  return j.is_object() ? j : json(nullptr);
}

int64_t VersionStartUs(std::string_view stored_provenance, int64_t written_us) {
  return ParsedVersionStartUs(ProvenanceToJson(stored_provenance), written_us);
}

int64_t ParsedVersionStartUs(const json& p, int64_t written_us) {
  if (!p.is_object()) return written_us;
  auto source = p.find("source");
  if (source != p.end() && *source == "api") {
    auto edited = p.find("edited_at");
    if (edited == p.end() || !edited->is_string()) return written_us;
    return ParseIsoToMicros(edited->get_ref<const std::string&>()).value_or(written_us);
  }
  auto messages = p.find("messages");
  if (messages == p.end() || !messages->is_array()) return written_us;
  std::optional<int64_t> latest;
  for (const json& m : *messages) {
    if (!m.is_object()) continue;
    auto ts = m.find("timestamp");
    if (ts == m.end() || !ts->is_string()) continue;
    if (auto us = ParseIsoToMicros(ts->get_ref<const std::string&>())) {
      latest = std::max(latest.value_or(*us), *us);
    }
  }
  return latest.value_or(written_us);
}

int64_t ValidFromUs(const AgentMemory& m, const json& provenance) {
  if (m.valid_from_us) return *m.valid_from_us;
  return ParsedVersionStartUs(provenance,
                              m.provenance_json.empty() ? m.created_at_us : m.updated_at_us);
}

int64_t ValidFromUs(const AgentMemory& m) {
  return m.valid_from_us ? *m.valid_from_us : CurrentVersionStartUs(m);
}

std::vector<VersionTime> VersionTimes(const std::vector<const HistoryRecord*>& history) {
  std::vector<VersionTime> out(history.size());
  std::vector<size_t> open;           // the entries of the version that holds so far
  const std::string* text = nullptr;  // its text
  auto end_open = [&](int64_t at) {
    for (size_t e : open) out[e].valid_to_us = std::max(*out[e].valid_from_us, at);
    open.clear();
  };
  for (size_t i = 0; i < history.size(); ++i) {
    const HistoryRecord& h = *history[i];
    if (h.event == "DELETE" || !h.new_text) {
      end_open(h.at_us);
      text = nullptr;
      continue;
    }
    if (text != nullptr && *text == *h.new_text) {  // the same version, other metadata
      out[i].valid_from_us = out[open.front()].valid_from_us;
      open.push_back(i);
      continue;
    }
    const int64_t from = VersionStartUs(h.provenance_json, h.at_us);
    end_open(from);
    out[i] = {.valid_from_us = from, .begins_version = true};
    open.push_back(i);
    text = &*h.new_text;
  }
  return out;
}

std::vector<VersionTime> VersionTimes(const std::vector<HistoryRecord>& history) {
  std::vector<const HistoryRecord*> entries;
  entries.reserve(history.size());
  for (const HistoryRecord& h : history) entries.push_back(&h);
  return VersionTimes(entries);
}

json IsoOrNull(const std::optional<int64_t>& time_us) {
  return time_us ? json(FormatIsoMicros(*time_us)) : json(nullptr);
}

}  // namespace engram
