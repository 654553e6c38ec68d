#include "transfer/export_format.h"

#include <fmt/format.h>

#include <cstdint>
#include <optional>

#include "common/codec.h"
#include "common/job_status.h"
#include "common/json_reader.h"

namespace engram::transfer {
namespace {

using json = nlohmann::json;

// A vector as base64 of its bytes (FloatVectorBytes: float32, little-endian).
json EncodeVector(const std::vector<float>& v, const std::string& model) {
  return {{"model", model}, {"data", Base64Encode(FloatVectorBytes(v))}};
}

// Stored JSON text (metadata, parts, provenance) as a JSON value; text that does not parse (never
// written by Engram: a damaged row) is kept as a string, which the importer refuses.
json StoredJson(const std::string& text) {
  json v = ReadJsonOrDiscarded(text, kStoredJsonLimits);
  if (v.is_discarded()) return text;
  return v;
}

// Reads the fields of one JSON object, remembering the first problem; the caller checks status()
// once at the end. `where` names the object ("memory", "skill.versions[2]").
class Fields {
 public:
  Fields(const json& object, std::string where, Status* status)
      : j_(object), where_(std::move(where)), status_(status) {
    if (!j_.is_object()) Fail("", "expected an object");
  }

  std::string Str(const char* name, bool required = true) {
    const json* v = Find(name, required);
    if (v == nullptr) return {};
    if (!v->is_string()) return Fail(name, "expected a string"), std::string();
    return v->get<std::string>();
  }
  std::optional<std::string> OptionalStr(const char* name) {
    const json* v = Find(name, false);
    if (v == nullptr || v->is_null()) return std::nullopt;
    if (!v->is_string()) return Fail(name, "expected a string or null"), std::nullopt;
    return v->get<std::string>();
  }
  int64_t Int(const char* name, bool required = true) {
    const json* v = Find(name, required);
    if (v == nullptr) return 0;
    if (!v->is_number_integer()) return Fail(name, "expected an integer"), 0;
    return v->get<int64_t>();
  }
  std::optional<int64_t> OptionalInt(const char* name) {
    const json* v = Find(name, false);
    if (v == nullptr || v->is_null()) return std::nullopt;
    return Int(name);
  }
  // Stored JSON text of one kind (Engram writes metadata, provenance and snapshots as objects,
  // message parts as an array of objects with a "type"); `fallback` when absent or null.
  std::string JsonObject(const char* name, std::string fallback) {
    const json* v = Find(name, false);
    if (v == nullptr || v->is_null()) return fallback;
    if (!v->is_object()) return Fail(name, "expected an object"), std::string();
    return DumpJson(*v);
  }
  std::string Parts(const char* name) {
    const json* v = Find(name, false);
    if (v == nullptr || v->is_null()) return {};
    // As the Leaderboard stores them: {"type":"text","text":…} and
    // {"type":"image","sha256":…,"mime":…}.
    auto text_of = [](const json& part, const char* key) {
      auto it = part.find(key);
      return it != part.end() && it->is_string();
    };
    bool ok = v->is_array() && !v->empty();
    for (size_t i = 0; ok && i < v->size(); ++i) {
      const json& part = (*v)[i];
      ok = part.is_object() && text_of(part, "type") &&
           (part["type"] == "text"
                ? text_of(part, "text")
                : part["type"] == "image" && text_of(part, "sha256") && text_of(part, "mime"));
    }
    if (!ok) {
      Fail(name, "expected an array of text and image parts");
      return {};
    }
    return DumpJson(*v);
  }
  // A required string that must not be empty (an id, a scope).
  std::string Id(const char* name) {
    std::string v = Str(name);
    if (status_->ok() && v.empty()) Fail(name, "must not be empty");
    return v;
  }
  int32_t Position(const char* name, bool required) {
    const int64_t v = Int(name, required);
    if (v < 0 || v > INT32_MAX) Fail(name, "expected an integer from 0 to 2147483647");
    return static_cast<int32_t>(v);
  }
  std::vector<std::string> StrList(const char* name) {
    std::vector<std::string> out;
    const json* v = Find(name, false);
    if (v == nullptr) return out;
    if (!v->is_array()) return Fail(name, "expected an array of strings"), out;
    for (const json& s : *v) {
      if (!s.is_string()) return Fail(name, "expected an array of strings"), out;
      out.push_back(s.get<std::string>());
    }
    return out;
  }
  // An array of objects, each read by `read(Fields&)`.
  template <typename T, typename Read>
  std::vector<T> List(const char* name, Read read) {
    std::vector<T> out;
    const json* v = Find(name, false);
    if (v == nullptr) return out;
    if (!v->is_array()) return Fail(name, "expected an array"), out;
    for (size_t i = 0; i < v->size() && status_->ok(); ++i) {
      Fields item((*v)[i], fmt::format("{}.{}[{}]", where_, name, i), status_);
      if (status_->ok()) out.push_back(read(item));
    }
    return out;
  }
  // {"model", "data"}: fills `vector` and `model`; absent leaves both empty.
  void Vector(std::vector<float>* vector, std::string* model) {
    const json* v = Find("vector", false);
    if (v == nullptr || v->is_null()) return;
    Fields f(*v, where_ + ".vector", status_);
    std::string m = f.Str("model");
    std::string data = f.Str("data");
    if (!status_->ok()) return;
    std::optional<std::string> bytes = Base64Decode(data);
    if (!bytes || bytes->size() % sizeof(float) != 0 || bytes->empty()) {
      Fail("vector.data", "expected base64 of float32 values");
      return;
    }
    *vector = FloatVectorFromBytes(*bytes);
    *model = std::move(m);
  }
  const json* Find(const char* name, bool required) {
    if (!status_->ok() || !j_.is_object()) return nullptr;
    auto it = j_.find(name);
    if (it == j_.end()) {
      if (required) Fail(name, "missing");
      return nullptr;
    }
    return &*it;
  }
  void Fail(std::string_view name, std::string_view problem) {
    if (!status_->ok()) return;
    *status_ = Status::InvalidParameter(
        fmt::format("{}{}{}: {}", where_, name.empty() ? "" : ".", name, problem));
  }

 private:
  const json& j_;
  std::string where_;
  Status* status_;
};

void PutVector(json& j, const std::vector<float>& v, const std::string& model, bool vectors) {
  if (vectors && !v.empty()) j["vector"] = EncodeVector(v, model);
}

template <typename T>
void PutOptional(json& j, const char* name, const std::optional<T>& v) {
  if (v) j[name] = *v;
}

// The fields a Leaderboard message and an agent memory share.
json EncodeMemoryRow(const MemoryRecord& m, std::string_view type, bool vectors) {
  json j = {{"type", std::string(type)},
            {"workspace", m.workspace},
            {"id", m.id},
            {"user_id", m.user_id},
            {"agent_id", m.agent_id},
            {"run_id", m.run_id},
            {"session_id", m.session_id},
            {"role", m.role},
            {"text", m.text},
            {"metadata", StoredJson(m.metadata_json)},
            {"position", m.position},
            {"created_at_us", m.created_at_us},
            {"updated_at_us", m.updated_at_us}};
  if (!m.parts_json.empty()) j["parts"] = StoredJson(m.parts_json);
  PutOptional(j, "source_ts_us", m.source_ts_us);
  PutVector(j, m.vector, m.vector_model, vectors);
  return j;
}

MemoryRecord DecodeMemoryRow(Fields& f) {
  MemoryRecord m;
  m.workspace = f.Id("workspace");
  m.id = f.Id("id");
  m.user_id = f.Str("user_id", false);
  m.agent_id = f.Str("agent_id", false);
  m.run_id = f.Str("run_id", false);
  m.session_id = f.Str("session_id", false);
  m.role = f.Str("role", false);
  m.text = f.Str("text");
  m.metadata_json = f.JsonObject("metadata", "{}");
  m.parts_json = f.Parts("parts");
  m.source_ts_us = f.OptionalInt("source_ts_us");
  m.position = f.Position("position", false);
  m.created_at_us = f.Int("created_at_us");
  m.updated_at_us = f.Int("updated_at_us");
  f.Vector(&m.vector, &m.vector_model);
  return m;
}

HistoryRecord DecodeHistory(Fields& f, const std::string& memory_id) {
  HistoryRecord h;
  h.memory_id = memory_id;
  h.event = f.Str("event");
  h.old_text = f.OptionalStr("old_text");
  h.new_text = f.OptionalStr("new_text");
  h.old_metadata_json = f.OptionalStr("old_metadata");
  h.new_metadata_json = f.OptionalStr("new_metadata");
  h.event_id = f.Str("event_id", false);
  h.at_us = f.Int("at_us");
  h.provenance_json = f.JsonObject("provenance", "");
  if (h.event != "ADD" && h.event != "UPDATE" && h.event != "DELETE") {
    f.Fail("event", "expected ADD, UPDATE or DELETE");
  }
  return h;
}

}  // namespace

json EncodeHeader(const ExportHeader& header) {
  return {{"format", std::string(kFormat)},
          {"version", header.version},
          {"engram_version", header.engram_version},
          {"created_at", header.created_at},
          {"vectors", header.vectors}};
}

json EncodeImage(const ImageBlob& image) {
  return {{"type", "image"},
          {"sha256", image.sha256},
          {"mime", image.mime},
          {"data", Base64Encode(image.bytes)}};
}

json EncodeMessage(const MemoryRecord& message, bool vectors) {
  return EncodeMemoryRow(message, "leaderboard_message", vectors);
}

json EncodeAgentMemory(const AgentMemoryImport& item, bool vectors) {
  const MemoryRecord& m = item.memory;
  json j = EncodeMemoryRow(m, "memory", vectors);
  j["app_id"] = m.app_id;
  j["categories"] = m.categories;
  PutOptional(j, "expires_at_us", m.expires_at_us);
  if (!m.provenance_json.empty()) j["provenance"] = StoredJson(m.provenance_json);
  json history = json::array();
  for (const HistoryRecord& h : item.history) {
    json e = {{"event", h.event}, {"event_id", h.event_id}, {"at_us", h.at_us}};
    PutOptional(e, "old_text", h.old_text);
    PutOptional(e, "new_text", h.new_text);
    PutOptional(e, "old_metadata", h.old_metadata_json);
    PutOptional(e, "new_metadata", h.new_metadata_json);
    if (!h.provenance_json.empty()) e["provenance"] = StoredJson(h.provenance_json);
    history.push_back(std::move(e));
  }
  j["history"] = std::move(history);
  json feedback = json::array();
  for (const MemoryFeedbackRecord& fb : item.feedback) {
    feedback.push_back({{"id", fb.id},
                        {"feedback", fb.feedback},
                        {"reason", fb.reason},
                        {"created_at_us", fb.created_at_us}});
  }
  j["feedback"] = std::move(feedback);
  return j;
}

json EncodeSkill(const SkillItem& item, bool vectors) {
  const SkillRecord& s = item.skill;
  json j = {{"type", "skill"},
            {"workspace", s.workspace},
            {"id", s.id},
            {"owner", s.owner},
            {"agent_id", s.agent_id},
            {"name", s.name},
            {"description", s.description},
            {"version", s.version},
            {"tags", s.tags},
            {"triggers", s.triggers},
            {"license", s.license},
            {"metadata", StoredJson(s.metadata_json)},
            {"files", s.files},
            {"created_at_us", s.created_at_us},
            {"updated_at_us", s.updated_at_us}};
  PutVector(j, s.vector, s.vector_model, vectors);
  json versions = json::array();
  for (const SkillVersionRecord& v : item.versions) {
    versions.push_back({{"version", v.version},
                        {"snapshot", StoredJson(v.snapshot_json)},
                        {"replaced_at_us", v.replaced_at_us}});
  }
  j["versions"] = std::move(versions);
  return j;
}

json EncodeKbDocument(const KbDocumentItem& item, bool vectors) {
  const KbDocRecord& d = item.doc;
  json j = {{"type", "kb_document"},
            {"workspace", d.workspace},
            {"kb_id", d.kb_id},
            {"id", d.id},
            {"job_id", d.job_id},
            {"title", d.title},
            {"source_type", d.source_type},
            {"file_url", d.file_url},
            {"status", std::string(JobStatusName(d.status, JobVocabulary::kKbDocument))},
            {"content", d.content},
            {"error_message", d.error_message},
            {"created_at_us", d.created_at_us},
            {"updated_at_us", d.updated_at_us}};
  json chunks = json::array();
  for (const KbChunkRecord& c : item.chunks) {
    json cj = {{"position", c.position}, {"heading", c.heading}, {"text", c.text}};
    PutVector(cj, c.vector, c.vector_model, vectors);
    chunks.push_back(std::move(cj));
  }
  j["chunks"] = std::move(chunks);
  return j;
}

Result<ExportHeader> DecodeHeader(const json& line) {
  Status st;
  Fields f(line, "header", &st);
  const std::string format = f.Str("format");
  ExportHeader h;
  h.version = static_cast<int>(f.Int("version"));
  h.engram_version = f.Str("engram_version", false);
  h.created_at = f.Str("created_at", false);
  if (const json* v = f.Find("vectors", false); v != nullptr) {
    if (v->is_boolean()) {
      h.vectors = v->get<bool>();
    } else {
      f.Fail("vectors", "expected true or false");
    }
  }
  ENGRAM_RETURN_IF_ERROR(st);
  if (format != kFormat) {
    return Status::InvalidParameter(
        fmt::format("header.format: expected \"{}\" (not an Engram export)", kFormat));
  }
  if (h.version < 1 || h.version > kFormatVersion) {
    return Status::InvalidParameter(
        fmt::format("header.version: {} is not a version this Engram reads (1 to {})", h.version,
                    kFormatVersion));
  }
  return h;
}

Result<ExportItem> DecodeItem(const json& line) {
  Status st;
  if (!line.is_object() || !line.contains("type") || !line["type"].is_string()) {
    return Status::InvalidParameter("type: missing or not a string");
  }
  const std::string type = line["type"].get<std::string>();
  if (type == "image") {
    Fields f(line, "image", &st);
    ImageBlob image{.sha256 = f.Str("sha256"), .mime = f.Str("mime")};
    const std::string data = f.Str("data");
    ENGRAM_RETURN_IF_ERROR(st);
    std::optional<std::string> bytes = Base64Decode(data);
    if (!bytes) return Status::InvalidParameter("image.data: expected base64");
    if (Sha256Hex(*bytes) != image.sha256) {
      return Status::InvalidParameter("image.sha256: does not match the image's bytes");
    }
    image.bytes = std::move(*bytes);
    return ExportItem(std::move(image));
  }
  if (type == "leaderboard_message") {
    Fields f(line, "leaderboard_message", &st);
    MemoryRecord m = DecodeMemoryRow(f);
    if (st.ok() && m.user_id.empty()) f.Fail("user_id", "missing");
    ENGRAM_RETURN_IF_ERROR(st);
    return ExportItem(std::move(m));
  }
  if (type == "memory") {
    Fields f(line, "memory", &st);
    AgentMemoryImport item;
    item.memory = DecodeMemoryRow(f);
    MemoryRecord& m = item.memory;
    m.app_id = f.Str("app_id", false);
    m.categories = f.StrList("categories");
    m.expires_at_us = f.OptionalInt("expires_at_us");
    m.provenance_json = f.JsonObject("provenance", "");
    item.history =
        f.List<HistoryRecord>("history", [&m](Fields& h) { return DecodeHistory(h, m.id); });
    item.feedback = f.List<MemoryFeedbackRecord>("feedback", [&m](Fields& fb) {
      return MemoryFeedbackRecord{.id = fb.Id("id"),
                                  .memory_id = m.id,
                                  .feedback = fb.Str("feedback", false),
                                  .reason = fb.Str("reason", false),
                                  .created_at_us = fb.Int("created_at_us")};
    });
    ENGRAM_RETURN_IF_ERROR(st);
    return ExportItem(std::move(item));
  }
  if (type == "skill") {
    Fields f(line, "skill", &st);
    SkillItem item;
    SkillRecord& s = item.skill;
    s.workspace = f.Id("workspace");
    s.id = f.Id("id");
    s.owner = f.Id("owner");
    s.agent_id = f.Str("agent_id", false);
    s.name = f.Id("name");
    s.description = f.Str("description", false);
    s.version = f.Str("version", false);
    s.tags = f.StrList("tags");
    s.triggers = f.StrList("triggers");
    s.license = f.Str("license", false);
    s.metadata_json = f.JsonObject("metadata", "{}");
    s.created_at_us = f.Int("created_at_us");
    s.updated_at_us = f.Int("updated_at_us");
    f.Vector(&s.vector, &s.vector_model);
    if (const json* files = f.Find("files", true); files != nullptr) {
      if (!files->is_object()) f.Fail("files", "expected an object of path to text");
      for (auto it = files->begin(); st.ok() && it != files->end(); ++it) {
        if (!it->is_string()) {
          f.Fail("files", "expected an object of path to text");
          break;
        }
        s.files[it.key()] = it->get<std::string>();
      }
      if (st.ok() && !s.files.count("SKILL.md")) f.Fail("files", "SKILL.md missing");
    }
    item.versions = f.List<SkillVersionRecord>("versions", [&s](Fields& v) {
      SkillVersionRecord r;
      r.skill_id = s.id;
      r.version = v.Str("version", false);
      r.snapshot_json = v.JsonObject("snapshot", "{}");
      r.replaced_at_us = v.Int("replaced_at_us");
      return r;
    });
    ENGRAM_RETURN_IF_ERROR(st);
    return ExportItem(std::move(item));
  }
  if (type == "kb_document") {
    Fields f(line, "kb_document", &st);
    KbDocumentItem item;
    KbDocRecord& d = item.doc;
    d.workspace = f.Id("workspace");
    d.kb_id = f.Id("kb_id");
    d.id = f.Id("id");
    d.job_id = f.Id("job_id");
    d.title = f.Str("title", false);
    d.source_type = f.Str("source_type", false);
    d.file_url = f.Str("file_url", false);
    const std::string status = f.Str("status");
    d.content = f.Str("content", false);
    d.error_message = f.Str("error_message", false);
    d.created_at_us = f.Int("created_at_us");
    d.updated_at_us = f.Int("updated_at_us");
    item.chunks = f.List<KbChunkRecord>("chunks", [&d](Fields& c) {
      KbChunkRecord r;
      r.doc_id = d.id;
      r.title = d.title;
      r.position = c.Position("position", true);
      r.heading = c.Str("heading", false);
      r.text = c.Str("text");
      c.Vector(&r.vector, &r.vector_model);
      return r;
    });
    ENGRAM_RETURN_IF_ERROR(st);
    std::optional<JobStatus> parsed = ParseJobStatus(status, JobVocabulary::kKbDocument);
    if (!parsed) {
      return Status::InvalidParameter("kb_document.status: expected PROCESSING, SUCCESS or FAIL");
    }
    d.status = *parsed;
    return ExportItem(std::move(item));
  }
  return Status::InvalidParameter(
      fmt::format("type: \"{}\" is not image, leaderboard_message, memory, skill or kb_document",
                  type.substr(0, 40)));
}

}  // namespace engram::transfer
