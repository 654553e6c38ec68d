// The skill_search and skill_get tools (service_tools.h).
#include <fmt/format.h>

#include "common/json_reader.h"
#include "common/time_util.h"
#include "mcp/service_tools.h"
#include "mcp/tool_schemas.h"

namespace engram::mcp {

namespace {
using json = nlohmann::json;
namespace s = schema;

void AddSearch(ToolRegistry& registry, SkillService* service, const SkillApiLimits& limits) {
  json props = {
      {"query", s::String("the task a skill should help with", limits.max_query_bytes, 1)},
      {"user_id", s::String("the skills' owner", limits.max_id_bytes, 1)},
      {"agent_id", s::String("only skills of this agent", limits.max_id_bytes, 1)},
      {"size", s::Integer("how many skills at most (default 10)", 1, limits.max_size)}};
  json hit =
      s::Shape({{"skill_id", s::String("s-...")},
                {"name", s::String("")},
                {"description", s::String("")},
                {"version", s::String("")},
                {"user_id", s::String("the owner")},
                {"agent_id", s::String("")},
                {"score", s::Number("relevance, higher is better", 0, 1)}},
               {"skill_id", "name", "description", "version", "user_id", "agent_id", "score"});
  registry.Add(Tool{
      .name = "skill_search",
      .title = "Search skills",
      .description =
          "Find an owner's skills (reusable procedures with SKILL.md instructions) that fit a "
          "task, best first. Read one with skill_get.",
      .input_schema = s::Closed(props, {"query", "user_id"}),
      .output_schema = s::Shape({{"results", s::ArrayOf(hit)}}, {"results"}),
      .hints = {.read_only = true, .destructive = false, .idempotent = true},
      .ready = WorkspaceLoadedProbe(service),
      .handler = [service, limits](const json& args, const ToolContext& ctx) -> Result<ToolResult> {
        auto request = ParseSkillSearch(DumpJson(args), ctx.workspace, limits);
        if (!request.ok()) {
          return ToolResult::Error("Invalid arguments for skill_search: " +
                                   request.status().message());
        }
        auto hits = service->Search(*request);
        if (!hits.ok()) return ServiceFailure("skill_search", hits.status());
        json results = json::array();
        std::string text =
            hits->empty() ? "No skills matched." : fmt::format("{} skills found:", hits->size());
        int rank = 0;
        for (const SkillHit& h : *hits) {
          results.push_back({{"skill_id", h.skill.id},
                             {"name", h.skill.name},
                             {"description", h.skill.description},
                             {"version", h.skill.version},
                             {"user_id", h.skill.owner},
                             {"agent_id", h.skill.agent_id},
                             {"score", h.score}});
          text += fmt::format("\n{}. {:.3f} [{}] {} (v{}): {}", ++rank, h.score, h.skill.id,
                              h.skill.name, h.skill.version, h.skill.description);
        }
        ToolResult result;
        result.structured = {{"results", std::move(results)}};
        result.text = std::move(text);
        return result;
      }});
}

void AddGet(ToolRegistry& registry, SkillService* service, const SkillToolOptions& options) {
  const SkillApiLimits& limits = options.limits;
  json props = {
      {"skill_id", s::String("the skill's id (s-...), from skill_search", limits.max_id_bytes, 1)},
      {"user_id",
       s::String("the skill's owner (omit for skills without one)", limits.max_id_bytes, 1)}};
  json output =
      s::Shape({{"skill_id", s::String("")},
                {"name", s::String("")},
                {"description", s::String("")},
                {"version", s::String("")},
                {"files",
                 {{"type", "object"},
                  {"description", "path -> UTF-8 content (SKILL.md first in the budget)"}}},
                {"omitted_files",
                 s::ArrayOf(s::String("path"), "files left out of this answer by its size budget")},
                {"tags", s::ArrayOf(s::String(""))},
                {"triggers", s::ArrayOf(s::String(""))},
                {"user_id", s::String("")},
                {"agent_id", s::String("")},
                {"updated_at", s::String("ISO 8601 UTC")}},
               {"skill_id", "name", "description", "version", "files", "omitted_files", "tags",
                "triggers", "user_id", "agent_id", "updated_at"});
  const size_t budget = options.max_file_bytes;
  registry.Add(Tool{
      .name = "skill_get",
      .title = "Get a skill",
      .description = "Read a skill: its SKILL.md instructions and resource files.",
      .input_schema = s::Closed(props, {"skill_id"}),
      .output_schema = output,
      .hints = {.read_only = true, .destructive = false, .idempotent = true},
      .ready = WorkspaceLoadedProbe(service),
      .handler = [service, budget](const json& args, const ToolContext& ctx) -> Result<ToolResult> {
        // No user_id: the workspace's view, as the REST get.
        std::optional<std::string> user_id;
        if (args.contains("user_id")) user_id = args.at("user_id").get<std::string>();
        auto skill = service->Get(ctx.workspace, args.at("skill_id").get<std::string>(), user_id);
        if (!skill.ok()) return ServiceFailure("skill_get", skill.status());
        // SKILL.md first, then the others in path order, while they fit the budget.
        json files = json::object();
        json omitted = json::array();
        size_t used = 0;
        auto take = [&](const std::string& path, const std::string& content) {
          if (used + content.size() > budget) {
            omitted.push_back(path);
            return;
          }
          used += content.size();
          files[path] = content;
        };
        if (auto it = skill->files.find("SKILL.md"); it != skill->files.end())
          take(it->first, it->second);
        for (const auto& [path, content] : skill->files) {
          if (path != "SKILL.md") take(path, content);
        }
        std::string text = fmt::format("Skill {} \"{}\" v{}: {}", skill->id, skill->name,
                                       skill->version, skill->description);
        if (files.contains("SKILL.md")) text += "\n\n" + files["SKILL.md"].get<std::string>();
        for (const auto& [path, content] : files.items()) {
          if (path != "SKILL.md") text += "\n\n--- " + path + " ---\n" + content.get<std::string>();
        }
        if (!omitted.empty())
          text += fmt::format("\n\n({} more files left out by size)", omitted.size());
        ToolResult result;
        result.structured = {{"skill_id", skill->id},
                             {"name", skill->name},
                             {"description", skill->description},
                             {"version", skill->version},
                             {"files", std::move(files)},
                             {"omitted_files", std::move(omitted)},
                             {"tags", skill->tags},
                             {"triggers", skill->triggers},
                             {"user_id", skill->owner},
                             {"agent_id", skill->agent_id},
                             {"updated_at", FormatIsoMicros(skill->updated_at_us)}};
        result.text = std::move(text);
        return result;
      }});
}

}  // namespace

void AddSkillTools(ToolRegistry& registry, SkillService* service, SkillToolOptions options) {
  AddSearch(registry, service, options.limits);
  AddGet(registry, service, options);
}

}  // namespace engram::mcp
