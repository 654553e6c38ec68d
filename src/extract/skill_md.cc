#include "extract/skill_md.h"

#include <fmt/format.h>
#include <yaml-cpp/depthguard.h>  // YAML::DeepRecursion
#include <yaml-cpp/yaml.h>

#include <nlohmann/json.hpp>

#include "extract/bounded_yaml.h"

namespace engram {

namespace {

using json = nlohmann::json;

struct Split {
  std::string_view front;  // YAML text between the --- lines
  std::string_view body;
};

// Splits off the front matter: a first line "---", then YAML, then a line "---" (or "...").
std::optional<Split> SplitFrontMatter(std::string_view text) {
  if (text.substr(0, 3) == "\xEF\xBB\xBF") text.remove_prefix(3);  // a BOM from some editors
  auto line_end = [&text](size_t from) {
    size_t nl = text.find('\n', from);
    return nl == std::string_view::npos ? text.size() : nl;
  };
  auto line = [&text](size_t from, size_t end) {
    std::string_view l = text.substr(from, end - from);
    while (!l.empty() && (l.back() == '\r' || l.back() == ' ' || l.back() == '\t'))
      l.remove_suffix(1);
    return l;
  };
  size_t end = line_end(0);
  if (line(0, end) != "---") return std::nullopt;
  size_t start = end + 1;
  for (size_t pos = start; pos < text.size();) {
    size_t e = line_end(pos);
    std::string_view l = line(pos, e);
    if (l == "---" || l == "...") {
      Split s;
      s.front = text.substr(start, pos - start);
      s.body = e < text.size() ? text.substr(e + 1) : std::string_view();
      return s;
    }
    pos = e + 1;
  }
  return std::nullopt;
}

Result<std::string> ScalarField(const YAML::Node& root, const char* key, bool required,
                                size_t max_bytes) {
  YAML::Node n = root[key];
  if (!n || n.IsNull()) {
    if (required) return Status::InvalidParameter(fmt::format("{} is required", key));
    return std::string();
  }
  if (!n.IsScalar()) return Status::InvalidParameter(fmt::format("{} must be a string", key));
  std::string v = n.Scalar();
  size_t b = v.find_first_not_of(" \t\r\n");
  v = b == std::string::npos ? std::string() : v.substr(b, v.find_last_not_of(" \t\r\n") - b + 1);
  if (required && v.empty())
    return Status::InvalidParameter(fmt::format("{} must not be empty", key));
  if (v.size() > max_bytes) {
    return Status::InvalidParameter(
        fmt::format("{} is too long: {} bytes, at most {} allowed", key, v.size(), max_bytes));
  }
  return v;
}

// A list of strings: a YAML sequence of scalars, or one comma-separated scalar.
Result<std::vector<std::string>> ListField(const YAML::Node& root, const char* key,
                                           const SkillMdLimits& limits) {
  std::vector<std::string> out;
  YAML::Node n = root[key];
  if (!n || n.IsNull()) return out;
  auto add = [&](std::string v) -> Status {
    size_t b = v.find_first_not_of(" \t\r\n");
    if (b == std::string::npos) return Status::Ok();
    v = v.substr(b, v.find_last_not_of(" \t\r\n") - b + 1);
    if (v.size() > limits.max_item_bytes) {
      return Status::InvalidParameter(
          fmt::format("{} has an item longer than {} bytes", key, limits.max_item_bytes));
    }
    out.push_back(std::move(v));
    return Status::Ok();
  };
  if (n.IsScalar()) {
    const std::string& s = n.Scalar();
    size_t from = 0;
    while (from <= s.size()) {
      size_t comma = s.find(',', from);
      if (comma == std::string::npos) comma = s.size();
      ENGRAM_RETURN_IF_ERROR(add(s.substr(from, comma - from)));
      from = comma + 1;
    }
  } else if (n.IsSequence()) {
    for (const auto& item : n) {
      if (!item.IsScalar()) {
        return Status::InvalidParameter(fmt::format("{} must be a list of strings", key));
      }
      ENGRAM_RETURN_IF_ERROR(add(item.Scalar()));
    }
  } else {
    return Status::InvalidParameter(fmt::format("{} must be a list of strings", key));
  }
  if (out.size() > limits.max_list_items) {
    return Status::InvalidParameter(
        fmt::format("{} has {} items, at most {} allowed", key, out.size(), limits.max_list_items));
  }
  return out;
}

void EmitList(YAML::Emitter& out, const char* key, const std::vector<std::string>& items) {
  out << YAML::Key << key << YAML::Value << YAML::Flow << YAML::BeginSeq;
  for (const auto& i : items) out << i;
  out << YAML::EndSeq;
}

YAML::Node ListNode(const std::vector<std::string>& items) {
  YAML::Node n(YAML::NodeType::Sequence);
  for (const auto& i : items) n.push_back(i);
  return n;
}

}  // namespace

Result<ParsedSkillMd> ParseSkillMd(std::string_view text, const SkillMdLimits& limits) {
  auto split = SplitFrontMatter(text);
  if (!split) {
    return Status::InvalidParameter(
        "SKILL.md has no YAML front matter (it must start with a '---' line and end it with "
        "another '---' line)");
  }
  if (split->front.size() > limits.max_front_matter_bytes) {
    return Status::InvalidParameter(fmt::format("SKILL.md front matter is larger than {} bytes",
                                                limits.max_front_matter_bytes));
  }
  ParsedSkillMd out;
  try {
    YAML::Node root = YAML::Load(std::string(split->front));
    if (!root.IsMap()) {
      return Status::InvalidParameter("SKILL.md front matter must be a YAML mapping (key: value)");
    }
    // The whole front matter is walked under the budget, not only `metadata`: a key Engram does
    // not read is still stored in SKILL.md and served back, and an alias bomb there would go off
    // in the next reader. The walk also yields `metadata` as JSON.
    auto tree = BoundedYamlToJson(root, {.max_nodes = limits.max_front_matter_nodes,
                                         .max_bytes = limits.max_front_matter_bytes,
                                         .max_depth = limits.max_front_matter_depth});
    if (!tree.ok()) {
      return Status::InvalidParameter("SKILL.md front matter " + tree.status().message());
    }
    SkillFrontMatter& f = out.front;
    auto name = ScalarField(root, "name", true, limits.max_name_bytes);
    if (!name.ok()) return name.status();
    f.name = *name;
    auto description = ScalarField(root, "description", true, limits.max_description_bytes);
    if (!description.ok()) return description.status();
    f.description = *description;
    auto version = ScalarField(root, "version", false, limits.max_item_bytes);
    if (!version.ok()) return version.status();
    f.version = *version;
    auto license = ScalarField(root, "license", false, limits.max_description_bytes);
    if (!license.ok()) return license.status();
    f.license = *license;
    auto tags = ListField(root, "tags", limits);
    if (!tags.ok()) return tags.status();
    f.tags = *tags;
    auto triggers = ListField(root, "triggers", limits);
    if (!triggers.ok()) return triggers.status();
    f.triggers = *triggers;
    if (auto m = tree->find("metadata"); m != tree->end() && !m->is_null()) {
      if (!m->is_object()) return Status::InvalidParameter("metadata must be a mapping");
      f.metadata_json = m->dump(-1, ' ', false, json::error_handler_t::replace);
    }
  } catch (const YAML::DeepRecursion& e) {
    // yaml-cpp 0.7's parser recurses per nesting level but stops itself at its depth guard:
    // "[[[[..." or "{a: {a: ..." 100,000 deep is refused below 500 levels, measured in under
    // 256 KiB of stack (threads here have the default 8 MiB), so no pre-scan of the text is
    // needed, and a second YAML grammar that could disagree with yaml-cpp's is avoided.
    return Status::InvalidParameter(
        fmt::format("SKILL.md front matter nests too deeply (line {})", e.mark.line + 2));
  } catch (const YAML::Exception& e) {
    // The mark says where; the message never quotes the document.
    return Status::InvalidParameter(
        fmt::format("SKILL.md front matter is not valid YAML (line {})", e.mark.line + 2));
  }
  out.body = std::string(split->body);
  return out;
}

std::string RenderSkillMd(const SkillFrontMatter& f, std::string_view body) {
  YAML::Emitter out;
  out << YAML::BeginMap;
  out << YAML::Key << "name" << YAML::Value << f.name;
  out << YAML::Key << "description" << YAML::Value << f.description;
  if (!f.version.empty()) out << YAML::Key << "version" << YAML::Value << f.version;
  if (!f.tags.empty()) EmitList(out, "tags", f.tags);
  if (!f.triggers.empty()) EmitList(out, "triggers", f.triggers);
  if (!f.license.empty()) out << YAML::Key << "license" << YAML::Value << f.license;
  out << YAML::EndMap;
  std::string text = "---\n";
  text += out.c_str();
  text += "\n---\n";
  text += body;
  return text;
}

Result<std::string> RewriteFrontMatter(std::string_view skill_md, const SkillFrontMatter& f) {
  auto split = SplitFrontMatter(skill_md);
  if (!split) return Status::InvalidParameter("SKILL.md has no YAML front matter");
  try {
    YAML::Node root = YAML::Load(std::string(split->front));
    if (!root.IsMap()) return Status::InvalidParameter("SKILL.md front matter must be a mapping");
    root["name"] = f.name;
    root["description"] = f.description;
    if (!f.version.empty()) root["version"] = f.version;
    if (!f.tags.empty()) root["tags"] = ListNode(f.tags);
    if (!f.triggers.empty()) root["triggers"] = ListNode(f.triggers);
    YAML::Emitter out;
    out << root;
    std::string text = "---\n";
    text += out.c_str();
    text += "\n---\n";
    text += split->body;
    return text;
  } catch (const YAML::Exception& e) {
    return Status::InvalidParameter(
        fmt::format("SKILL.md front matter is not valid YAML (line {})", e.mark.line + 2));
  }
}

}  // namespace engram
