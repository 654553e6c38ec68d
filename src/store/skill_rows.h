// Skill rows as every store keeps them: the column list; lists, files and replaced states as JSON
// text, so the SQLite and PostgreSQL rows of a skill read the same. Internal to store/.
// Thread-safety: pure functions.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "store/row_reader.h"
#include "store/skill_types.h"

namespace engram::skill_rows {

// A JSON array of strings (tags, triggers, skill ids).
std::string EncodeList(const std::vector<std::string>& list);
// The strings of a JSON array; empty when the text is no array.
std::vector<std::string> DecodeList(const std::string& text);

// A JSON object path -> content.
std::string EncodeFiles(const std::map<std::string, std::string>& files);
// The string members of a JSON object; empty when the text is no object.
std::map<std::string, std::string> DecodeFiles(const std::string& text);

// The replaced state of a skill, as a version row keeps it (name, description, files, ...).
std::string Snapshot(const SkillRecord& r);

// The columns of a skill row, in the order both stores read and write them.
inline constexpr const char* kSkillColumns =
    "id, workspace, owner, agent_id, name, description, version, tags, triggers, license, "
    "metadata, files, created_at, updated_at, vector, vector_model";

// A row of kSkillColumns.
SkillRecord ReadSkillRow(const RowReader& row);

}  // namespace engram::skill_rows
