#include "store/skill_rows.h"

#include <nlohmann/json.hpp>

#include "common/json_reader.h"

namespace engram::skill_rows {

namespace {

using json = nlohmann::json;

// Invalid UTF-8 is replaced rather than thrown on: a stored row must always be writable.
std::string Dump(const json& j) { return j.dump(-1, ' ', false, json::error_handler_t::replace); }

}  // namespace

std::string EncodeList(const std::vector<std::string>& list) { return Dump(json(list)); }

std::vector<std::string> DecodeList(const std::string& text) {
  std::vector<std::string> out;
  json j = ReadJsonOrDiscarded(text, kStoredJsonLimits);
  if (!j.is_array()) return out;
  for (const auto& v : j) {
    if (v.is_string()) out.push_back(v.get<std::string>());
  }
  return out;
}

std::string EncodeFiles(const std::map<std::string, std::string>& files) {
  return Dump(json(files));
}

std::map<std::string, std::string> DecodeFiles(const std::string& text) {
  std::map<std::string, std::string> out;
  json files = ReadJsonOrDiscarded(text, kStoredJsonLimits);
  if (!files.is_object()) return out;
  for (const auto& [path, content] : files.items()) {
    if (content.is_string()) out.emplace(path, content.get<std::string>());
  }
  return out;
}

std::string Snapshot(const SkillRecord& r) {
  json meta = ReadJsonOrDiscarded(r.metadata_json, kStoredJsonLimits);
  return Dump({{"name", r.name},
               {"description", r.description},
               {"version", r.version},
               {"agent_id", r.agent_id},
               {"tags", r.tags},
               {"triggers", r.triggers},
               {"license", r.license},
               {"metadata", meta.is_object() ? meta : json::object()},
               {"files", r.files},
               {"updated_at_us", r.updated_at_us}});
}

SkillRecord ReadSkillRow(const RowReader& row) {
  SkillRecord s;
  s.id = row.Text(0);
  s.workspace = row.Text(1);
  s.owner = row.Text(2);
  s.agent_id = row.Text(3);
  s.name = row.Text(4);
  s.description = row.Text(5);
  s.version = row.Text(6);
  s.tags = DecodeList(row.Text(7));
  s.triggers = DecodeList(row.Text(8));
  s.license = row.Text(9);
  s.metadata_json = row.Text(10);
  s.files = DecodeFiles(row.Text(11));
  s.created_at_us = row.Int(12);
  s.updated_at_us = row.Int(13);
  s.vector = row.Vector(14);
  s.vector_model = row.Text(15);
  return s;
}

}  // namespace engram::skill_rows
