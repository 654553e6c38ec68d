// SKILL.md: a skill's main file, Markdown with a YAML front matter block:
//
//   ---
//   name: deploy-web-app
//   description: How to deploy the web app to staging.
//   version: 1.0.0            # optional
//   tags: [deploy, web]       # optional: a list, or one comma-separated string
//   triggers: [deploy the app] # optional, same forms
//   license: MIT              # optional
//   metadata: {team: web}     # optional map
//   ---
//   # Deploy the web app
//   1. ...
//
// Parsed with yaml-cpp; its exceptions stop here and become kInvalidParameter statuses whose
// message names the field ("name is required", "tags must be a list of strings"). Callers prefix
// the skill they were reading.
//
// Thread-safety: pure functions.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"
#include "common/utf8.h"

namespace engram {

struct SkillFrontMatter {
  std::string name;
  std::string description;
  std::string version;  // "" when absent
  std::vector<std::string> tags;
  std::vector<std::string> triggers;
  std::string license;
  std::string metadata_json = "{}";  // the `metadata` map as a JSON object (scalars as strings)
};

struct ParsedSkillMd {
  SkillFrontMatter front;
  std::string body;  // the Markdown after the front matter
};

struct SkillMdLimits {
  size_t max_front_matter_bytes = 64 << 10;
  // The front matter as a tree with its YAML aliases expanded (see bounded_yaml.h): its bytes are
  // bounded by max_front_matter_bytes, its nodes and nesting by these.
  size_t max_front_matter_nodes = 10000;
  int max_front_matter_depth = 32;
  size_t max_name_bytes = 128;
  size_t max_description_bytes = 4096;
  size_t max_list_items = 64;  // tags, triggers
  size_t max_item_bytes = 256;
};

// Parses a SKILL.md. Errors (kInvalidParameter): no front matter, YAML syntax errors (with line),
// name / description missing or empty, fields of the wrong type or over the limits, a front
// matter whose aliases expand beyond the limits or that nests too deeply, keys that are not
// strings.
Result<ParsedSkillMd> ParseSkillMd(std::string_view text, const SkillMdLimits& limits = {});

// A SKILL.md with front matter written from `front` (empty optional fields left out), then `body`.
std::string RenderSkillMd(const SkillFrontMatter& front, std::string_view body);

// `skill_md` with its front matter's name, description, version, tags and triggers set from
// `front`, other keys and the body kept. kInvalidParameter when skill_md has no readable front
// matter.
Result<std::string> RewriteFrontMatter(std::string_view skill_md, const SkillFrontMatter& front);

}  // namespace engram
