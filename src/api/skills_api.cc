#include "api/skills_api.h"

#include <fmt/format.h>

#include <memory>
#include <nlohmann/json.hpp>
#include <tuple>

#include "api/conversation_input.h"
#include "api/envelope.h"
#include "api/json_input.h"
#include "api/memory_fields.h"
#include "api/query_params.h"
#include "api/search_explanation_json.h"
#include "common/codec.h"
#include "common/job_status.h"
#include "common/json_reader.h"
#include "common/time_util.h"

namespace engram {

namespace {

using json = nlohmann::json;

constexpr const char* kPrefix = "/v3/openapi/workspaces/{workspace_name}/memory/{service_id}";

Result<std::string> ReadId(const json& j, const char* name, bool required,
                           const SkillApiLimits& limits) {
  auto v = GetString(j, name, name, {.required = required, .max_bytes = limits.max_id_bytes});
  if (!v.ok()) return v.status();
  if (!*v) return std::string();
  if (!IsValidUtf8(**v))
    return Status::InvalidParameter(fmt::format("{} must be valid UTF-8", name));
  return **v;
}

Result<std::string> ReadText(const json& j, const char* name, bool required, size_t max_bytes) {
  auto v = GetString(j, name, name, {.required = required, .max_bytes = max_bytes});
  if (!v.ok()) return v.status();
  if (!*v) return std::string();
  if (!IsValidUtf8(**v))
    return Status::InvalidParameter(fmt::format("{} must be valid UTF-8", name));
  return **v;
}

Result<std::vector<std::string>> ReadStringList(const json& j, const char* name, size_t max_items,
                                                size_t max_bytes) {
  std::vector<std::string> out;
  const json& v = j.at(name);
  if (!v.is_array()) {
    return Status::InvalidParameter(
        fmt::format("{} must be an array of strings, got {}", name, JsonTypeName(v)));
  }
  if (v.size() > max_items) {
    return Status::InvalidParameter(
        fmt::format("{} has {} items, at most {} allowed", name, v.size(), max_items));
  }
  for (size_t i = 0; i < v.size(); ++i) {
    if (!v[i].is_string()) {
      return Status::InvalidParameter(
          fmt::format("{}[{}] must be a string, got {}", name, i, JsonTypeName(v[i])));
    }
    const std::string& s = v[i].get_ref<const std::string&>();
    if (s.size() > max_bytes || !IsValidUtf8(s) || IsBlank(s)) {
      return Status::InvalidParameter(fmt::format(
          "{}[{}] must be a non-empty UTF-8 string of at most {} bytes", name, i, max_bytes));
    }
    out.push_back(s);
  }
  return out;
}

// Unset ids and messages are "" (the reference shows "agent_id": ""), never null.
json IdOrNull(const std::string& v) { return json(v); }

json MetadataOf(const std::string& text) {
  json j = ReadJsonOrDiscarded(text, kStoredJsonLimits);
  return j.is_object() ? j : json::object();
}

// A skill as lists and search results show it; a list adds when it changed, a search its score.
json RenderSummary(const SkillSummary& s) {
  return {{"skill_id", s.id},     {"name", s.name},     {"description", s.description},
          {"version", s.version}, {"user_id", s.owner}, {"agent_id", IdOrNull(s.agent_id)}};
}

json RenderImported(const SkillRecord& s) {
  json paths = json::array();
  for (const auto& [path, content] : s.files) {
    if (path != "SKILL.md") paths.push_back(path);
  }
  return {{"id", s.id},
          {"name", s.name},
          {"description", s.description},
          {"version", s.version},
          {"owner", s.owner},
          {"tags", s.tags},
          {"triggers", s.triggers},
          {"resource_paths", std::move(paths)},
          {"updated_at", FormatIsoMicros(s.updated_at_us)}};
}

json RenderSkill(const SkillRecord& s, const std::vector<SkillVersionRecord>& versions) {
  json history = json::array();
  for (const auto& v : versions) {
    history.push_back({{"version", v.version}, {"replaced_at", FormatIsoMicros(v.replaced_at_us)}});
  }
  return {{"skill_id", s.id},
          {"name", s.name},
          {"description", s.description},
          {"version", s.version},
          {"files", s.files},
          {"tags", s.tags},
          {"triggers", s.triggers},
          {"user_id", s.owner},
          {"agent_id", IdOrNull(s.agent_id)},
          {"license", IdOrNull(s.license)},
          {"metadata", MetadataOf(s.metadata_json)},
          {"created_at", FormatIsoMicros(s.created_at_us)},
          {"updated_at", FormatIsoMicros(s.updated_at_us)},
          {"previous_versions", std::move(history)}};
}

json RenderTask(const SkillTaskRecord& task) {
  return {{"task_id", task.id},
          {"status", JobStatusName(task.status, JobVocabulary::kSkillTask)},
          {"skill_ids", task.skill_ids},
          {"error_message", IdOrNull(task.error_message)},
          {"created_at", FormatIsoMicros(task.created_at_us)},
          {"updated_at", FormatIsoMicros(task.updated_at_us)}};
}

}  // namespace

Result<SkillAddRequest> ParseSkillAdd(std::string_view body, const std::string& workspace,
                                      const SkillApiLimits& limits) {
  auto parsed = ParseJsonObject(body);
  if (!parsed.ok()) return parsed.status();
  const json& j = *parsed;
  SkillAddRequest req;
  req.workspace = workspace;
  auto messages = ParseConversation(j, {limits.max_messages, limits.max_message_bytes});
  if (!messages.ok()) return messages.status();
  req.messages = std::move(*messages);
  auto user = ReadId(j, "user_id", true, limits);
  if (!user.ok()) return user.status();
  req.user_id = *user;
  auto agent = ReadId(j, "agent_id", false, limits);
  if (!agent.ok()) return agent.status();
  req.agent_id = *agent;
  return req;
}

Result<SkillImportRequest> ParseSkillImport(std::string_view body, const std::string& workspace,
                                            const SkillApiLimits& limits) {
  auto parsed = ParseJsonObject(body);
  if (!parsed.ok()) return parsed.status();
  const json& j = *parsed;
  SkillImportRequest req;
  req.workspace = workspace;
  // Base64 is 4/3 of the bytes; whitespace may add a little.
  auto zip =
      GetString(j, "zip_base64", "zip_base64",
                {.max_bytes = limits.max_zip_bytes / 3 * 4 + (limits.max_zip_bytes >> 4) + 16});
  if (!zip.ok()) return zip.status();
  auto decoded = Base64Decode(**zip, limits.max_zip_bytes);
  if (!decoded) {
    return Status::InvalidParameter(fmt::format(
        "zip_base64 must be base64 of a ZIP archive of at most {} bytes", limits.max_zip_bytes));
  }
  req.zip = std::move(*decoded);
  auto user = ReadId(j, "user_id", true, limits);
  if (!user.ok()) return user.status();
  req.user_id = *user;
  auto agent = ReadId(j, "agent_id", false, limits);
  if (!agent.ok()) return agent.status();
  req.agent_id = *agent;
  return req;
}

Result<SkillSearchRequest> ParseSkillSearch(std::string_view body, const std::string& workspace,
                                            const SkillApiLimits& limits) {
  auto parsed = ParseJsonObject(body);
  if (!parsed.ok()) return parsed.status();
  const json& j = *parsed;
  SkillSearchRequest req;
  req.workspace = workspace;
  auto query = ReadText(j, "query", true, limits.max_query_bytes);
  if (!query.ok()) return query.status();
  req.query = *query;
  auto user = ReadId(j, "user_id", true, limits);
  if (!user.ok()) return user.status();
  req.user_id = *user;
  auto agent = ReadId(j, "agent_id", false, limits);
  if (!agent.ok()) return agent.status();
  req.agent_id = *agent;
  auto size = GetInt(j, "size", "size", 1, limits.max_size, false);
  if (!size.ok()) return size.status();
  if (*size) req.size = static_cast<size_t>(**size);
  auto explain = GetBool(j, "explain");
  if (!explain.ok()) return explain.status();
  req.explain = explain->value_or(false);
  return req;
}

Result<std::optional<std::string>> ParseSkillOwner(std::string_view query,
                                                   const SkillApiLimits& limits) {
  auto params = ParseQueryString(query);
  if (!params.ok()) return params.status();
  auto it = params->find("user_id");
  if (it == params->end()) return std::optional<std::string>();
  if (it->second.size() > limits.max_id_bytes) {
    return Status::InvalidParameter(
        fmt::format("user_id is too long: at most {} bytes allowed", limits.max_id_bytes));
  }
  return std::optional<std::string>(it->second);  // ParseQueryString has checked UTF-8
}

Result<SkillUpdateRequest> ParseSkillUpdate(std::string_view body, const std::string& workspace,
                                            const std::string& id, const SkillApiLimits& limits) {
  auto parsed = ParseJsonObject(body);
  if (!parsed.ok()) return parsed.status();
  const json& j = *parsed;
  SkillUpdateRequest req;
  req.workspace = workspace;
  req.id = id;
  auto user = ReadId(j, "user_id", true, limits);
  if (!user.ok()) return user.status();
  req.user_id = *user;
  auto present = [&j](const char* key) { return j.contains(key) && !j.at(key).is_null(); };
  bool any = false;
  for (auto [key, max, out] : {std::tuple<const char*, size_t, std::optional<std::string>*>{
                                   "name", limits.max_name_bytes, &req.name},
                               {"description", limits.max_description_bytes, &req.description},
                               {"version", limits.max_tag_bytes, &req.version}}) {
    if (!present(key)) continue;
    auto v = ReadText(j, key, true, max);
    if (!v.ok()) return v.status();
    *out = *v;
    any = true;
  }
  if (present("agent_id")) {
    auto agent = ReadId(j, "agent_id", false, limits);
    if (!agent.ok()) return agent.status();
    req.agent_id = *agent;
    any = true;
  }
  if (present("tags")) {
    auto tags = ReadStringList(j, "tags", limits.max_tags, limits.max_tag_bytes);
    if (!tags.ok()) return tags.status();
    req.tags = std::move(*tags);
    any = true;
  }
  if (present("files")) {
    const json& files = j.at("files");
    if (!files.is_object()) {
      return Status::InvalidParameter(fmt::format(
          "files must be an object mapping paths to contents, got {}", JsonTypeName(files)));
    }
    if (files.size() > limits.max_update_files) {
      return Status::InvalidParameter(fmt::format("files has {} entries, at most {} allowed",
                                                  files.size(), limits.max_update_files));
    }
    for (const auto& [raw_path, content] : files.items()) {
      auto path = NormaliseSkillPath(raw_path, limits.max_path_bytes);
      if (!path.ok() || path->empty()) {
        return Status::InvalidParameter(
            fmt::format("files: {}", path.ok() ? "a path is empty" : path.status().message()));
      }
      const std::string field = "files." + *path;
      if (content.is_null()) {
        req.files[*path] = std::nullopt;
        continue;
      }
      if (!content.is_string()) {
        return Status::InvalidParameter(
            fmt::format("{} must be a string (or null to remove the file), got {}", field,
                        JsonTypeName(content)));
      }
      const std::string& text = content.get_ref<const std::string&>();
      if (text.size() > limits.max_file_bytes) {
        return Status::InvalidParameter(fmt::format("{} is too long: {} bytes, at most {} allowed",
                                                    field, text.size(), limits.max_file_bytes));
      }
      if (!IsValidUtf8(text)) return Status::InvalidParameter(field + " must be valid UTF-8");
      req.files[*path] = text;
    }
    any = any || !req.files.empty();
  }
  if (!any) {
    return Status::InvalidParameter(
        "at least one of name, version, description, tags, files, agent_id is required");
  }
  return req;
}

namespace {

// The V3 skill handlers, one per route, over the service and the request limits they share.
class SkillHandlers {
 public:
  SkillHandlers(SkillService* service, SkillApiLimits limits)
      : service_(service), limits_(std::move(limits)) {}

  Result<HttpResponse> Add(const HttpRequest& req, RequestContext& ctx) const {
    auto parsed = ParseSkillAdd(req.body, PathWorkspace(ctx), limits_);
    if (!parsed.ok()) return parsed.status();
    auto id = service_->Add(*parsed);
    if (!id.ok()) return id.status();
    return V3Response(json{{"task_id", *id}}, ctx.request_id, ctx.ElapsedMs());
  }

  Result<HttpResponse> Task(const HttpRequest&, RequestContext& ctx) const {
    auto task = service_->GetTask(PathWorkspace(ctx), ctx.params.at("task_id"));
    if (!task.ok()) return task.status();
    return V3Response(RenderTask(*task), ctx.request_id, ctx.ElapsedMs());
  }

  Result<HttpResponse> Tasks(const HttpRequest& req, RequestContext& ctx) const {
    auto page = PageOnlyQuery(req.query, 20, static_cast<size_t>(limits_.max_size));
    if (!page.ok()) return page.status();
    size_t total = 0;
    auto tasks = service_->ListTasks(PathWorkspace(ctx), page->number, page->size, &total);
    if (!tasks.ok()) return tasks.status();
    json results = json::array();
    for (const auto& t : *tasks) results.push_back(RenderTask(t));
    return V3Response(ListPageBody(std::move(results), total, page->number, page->size),
                      ctx.request_id, ctx.ElapsedMs());
  }

  Result<HttpResponse> Import(const HttpRequest& req, RequestContext& ctx) const {
    auto parsed = ParseSkillImport(req.body, PathWorkspace(ctx), limits_);
    if (!parsed.ok()) return parsed.status();
    auto skills = service_->Import(*parsed);
    if (!skills.ok()) return skills.status();
    json data = json::array();
    for (const auto& s : *skills) data.push_back(RenderImported(s));
    return V3Response(json{{"imported_count", skills->size()}, {"data", std::move(data)}},
                      ctx.request_id, ctx.ElapsedMs());
  }

  Result<HttpResponse> List(const HttpRequest& req, RequestContext& ctx) const {
    auto params = ParseQueryString(req.query);
    if (!params.ok()) return params.status();
    ENGRAM_RETURN_IF_ERROR(
        CheckKnownQueryParams(*params, {"user_id", "agent_id", "page_number", "page_size"}));
    // Skills are owned: a list is one owner's, as a search is.
    std::string scope[2];
    const char* names[2] = {"user_id", "agent_id"};
    for (int i = 0; i < 2; ++i) {
      auto it = params->find(names[i]);
      if (it == params->end()) continue;
      ENGRAM_RETURN_IF_ERROR(CheckIdValue(it->second, names[i], limits_.max_id_bytes));
      scope[i] = it->second;
    }
    if (scope[0].empty()) return Status::InvalidParameter("user_id is required");
    auto page = PageQueryParams(*params, 20, static_cast<size_t>(limits_.max_size));
    if (!page.ok()) return page.status();
    size_t total = 0;
    auto skills =
        service_->List(PathWorkspace(ctx), scope[0], scope[1], page->number, page->size, &total);
    if (!skills.ok()) return skills.status();
    json results = json::array();
    for (const SkillSummary& s : *skills) {
      json item = RenderSummary(s);
      item["updated_at"] = FormatIsoMicros(s.updated_at_us);
      results.push_back(std::move(item));
    }
    return V3Response(ListPageBody(std::move(results), total, page->number, page->size),
                      ctx.request_id, ctx.ElapsedMs());
  }

  Result<HttpResponse> Search(const HttpRequest& req, RequestContext& ctx) const {
    auto parsed = ParseSkillSearch(req.body, PathWorkspace(ctx), limits_);
    if (!parsed.ok()) return parsed.status();
    auto hits = service_->Search(*parsed);
    if (!hits.ok()) return hits.status();
    json results = json::array();
    for (const auto& h : *hits) {
      json item = RenderSummary(h.skill);
      item["score"] = h.score;
      if (h.explain) item["explain"] = ExplanationJson(*h.explain);
      results.push_back(std::move(item));
    }
    return V3Response(json{{"results", std::move(results)}}, ctx.request_id, ctx.ElapsedMs());
  }

  Result<HttpResponse> Get(const HttpRequest& req, RequestContext& ctx) const {
    const std::string& id = ctx.params.at("skill_id");
    auto user_id = ParseSkillOwner(req.query, limits_);
    if (!user_id.ok()) return user_id.status();
    auto skill = service_->Get(PathWorkspace(ctx), id, *user_id);
    if (!skill.ok()) return skill.status();
    auto versions = service_->Versions(PathWorkspace(ctx), id);
    if (!versions.ok()) return versions.status();
    return V3Response(RenderSkill(*skill, *versions), ctx.request_id, ctx.ElapsedMs());
  }

  Result<HttpResponse> Update(const HttpRequest& req, RequestContext& ctx) const {
    const std::string& id = ctx.params.at("skill_id");
    auto parsed = ParseSkillUpdate(req.body, PathWorkspace(ctx), id, limits_);
    if (!parsed.ok()) return parsed.status();
    auto skill = service_->Update(*parsed);
    if (!skill.ok()) return skill.status();
    auto versions = service_->Versions(PathWorkspace(ctx), id);
    if (!versions.ok()) return versions.status();
    return V3Response(RenderSkill(*skill, *versions), ctx.request_id, ctx.ElapsedMs());
  }

  Result<HttpResponse> Delete(const HttpRequest& req, RequestContext& ctx) const {
    const std::string& id = ctx.params.at("skill_id");
    auto user_id = ParseSkillOwner(req.query, limits_);
    if (!user_id.ok()) return user_id.status();
    ENGRAM_RETURN_IF_ERROR(service_->Delete(PathWorkspace(ctx), id, *user_id));
    return V3Response(json{{"skill_id", id},
                           {"status", "success"},
                           {"message", fmt::format("Skill {} deleted", id)}},
                      ctx.request_id, ctx.ElapsedMs());
  }

 private:
  SkillService* service_;
  SkillApiLimits limits_;
};

}  // namespace

void RegisterSkillRoutes(Router& router, SkillService* service, SkillApiLimits limits) {
  const std::string p = std::string(kPrefix) + "/skills";
  auto h = std::make_shared<const SkillHandlers>(service, std::move(limits));
  using H = SkillHandlers;
  // Skills not yet loaded (and embedded) are loaded from the store first: not on an I/O thread.
  const auto loaded = RouteWorkspaceLoadedProbe(service);
  // Literal routes first: "skills/add" must not be taken for a skill id.
  router.Add({.method = "POST",
              .pattern = p + "/add",
              .name = "skill_add",
              .handler = BindHandler(h, &H::Add)});
  router.Add({.method = "GET",
              .pattern = p + "/tasks/{task_id}",
              .name = "skill_task",
              .handler = BindHandler(h, &H::Task)});
  router.Add({.method = "GET",
              .pattern = p + "/tasks",
              .name = "skill_task_list",
              .handler = BindHandler(h, &H::Tasks)});
  router.Add({.method = "POST",
              .pattern = p + "/import",
              .name = "skill_import",
              .handler = BindHandler(h, &H::Import)});
  router.Add({.method = "GET",
              .pattern = p,
              .name = "skill_list",
              .handler = BindHandler(h, &H::List),
              .compute_bound = true,
              .ready = loaded});
  router.Add({.method = "POST",
              .pattern = p + "/search",
              .name = "skill_search",
              .handler = BindHandler(h, &H::Search),
              .compute_bound = true,
              .ready = loaded});
  router.Add({.method = "GET",
              .pattern = p + "/{skill_id}",
              .name = "skill_get",
              .handler = BindHandler(h, &H::Get)});
  router.Add({.method = "PUT",
              .pattern = p + "/{skill_id}",
              .name = "skill_update",
              .handler = BindHandler(h, &H::Update)});
  router.Add({.method = "DELETE",
              .pattern = p + "/{skill_id}",
              .name = "skill_delete",
              .handler = BindHandler(h, &H::Delete)});
}

}  // namespace engram
