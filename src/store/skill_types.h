// Plain records of the skills API (V3) exchanged with a Store. Value types.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "common/job_status.h"

namespace engram {

// One skill: a reusable procedure (SKILL.md with YAML front matter, plus resource files).
struct SkillRecord {
  std::string id;  // s-<uuid>
  std::string workspace;
  std::string owner;     // the user_id that created it
  std::string agent_id;  // "" when none
  std::string name;      // unique per (workspace, owner)
  std::string description;
  std::string version;
  std::vector<std::string> tags;
  std::vector<std::string> triggers;
  std::string license;
  std::string metadata_json = "{}";          // front matter `metadata` merged with _meta.json
  std::map<std::string, std::string> files;  // path -> UTF-8 content; "SKILL.md" always present
  int64_t created_at_us = 0;
  int64_t updated_at_us = 0;
  // Embedding of the skill's intent text and its model; empty when it has none.
  std::vector<float> vector;
  std::string vector_model;
};

// A former state of a skill, kept when it is replaced by a new version or an update.
struct SkillVersionRecord {
  std::string skill_id;
  std::string version;
  std::string snapshot_json;  // the replaced skill as JSON (name, description, files, ...)
  int64_t replaced_at_us = 0;
};

// One asynchronous skill extraction (skills/add): a durable job row.
struct SkillTaskRecord {
  std::string id;  // st-<uuid>
  std::string workspace;
  // Stored and rendered as pending | running | completed | failed (JobVocabulary::kSkillTask).
  JobStatus status = JobStatus::kPending;
  std::string request_json;            // the validated add request
  std::vector<std::string> skill_ids;  // set when completed
  std::string error_message;
  int64_t created_at_us = 0;
  int64_t updated_at_us = 0;
};

struct SkillChange {
  enum class Op { kInsert, kUpdate, kDelete };
  Op op = Op::kInsert;
  // kInsert / kUpdate: the whole new state (an update replaces every column; an empty vector
  // drops the stored one). kDelete: id.
  SkillRecord record;
  // kUpdate: the state it replaces, recorded as a version row.
  std::optional<SkillRecord> previous;
};

// Applied atomically: all changes (and the task's end state, when set) or nothing.
struct SkillChangeBatch {
  std::string workspace;
  std::vector<SkillChange> changes;
  std::optional<SkillTaskRecord> finish_task;
};

}  // namespace engram
