#include "api/workspaces_api.h"

#include <algorithm>
#include <map>

#include "api/envelope.h"
#include "api/query_params.h"

namespace engram {

using nlohmann::json;

json RenderWorkspaceCounts(const WorkspaceCounts& c) {
  return json{
      {"workspace", c.workspace},
      {"memories", {{"count", c.memories}, {"users", c.memory_users}}},
      {"memory_events", {{"count", c.memory_events}, {"unfinished", c.memory_events_unfinished}}},
      {"skills", {{"count", c.skills}, {"owners", c.skill_owners}}},
      {"skill_tasks", {{"count", c.skill_tasks}, {"unfinished", c.skill_tasks_unfinished}}},
      {"knowledge_bases",
       {{"count", c.knowledge_bases},
        {"documents", c.documents},
        {"processing", c.documents_processing}}},
      {"leaderboard", {{"users", c.leaderboard_users}, {"messages", c.leaderboard_messages}}}};
}

namespace {

constexpr size_t kMaxPageSize = 100;

// The census narrowed to a limited key's workspaces, in name order, each of them present.
std::vector<WorkspaceCounts> Visible(std::vector<WorkspaceCounts> all,
                                     const std::optional<std::vector<std::string>>& limited) {
  if (!limited) return all;
  std::map<std::string, WorkspaceCounts> seen;
  for (const std::string& name : *limited) seen[name].workspace = name;
  for (WorkspaceCounts& c : all) {
    auto it = seen.find(c.workspace);
    if (it != seen.end()) it->second = std::move(c);
  }
  std::vector<WorkspaceCounts> out;
  out.reserve(seen.size());
  for (auto& [name, c] : seen) out.push_back(std::move(c));
  return out;
}

}  // namespace

void RegisterWorkspaceRoutes(Router& router, WorkspaceCensus* census, const ApiKeyAuth* auth) {
  router.Add(
      {.method = "GET",
       .pattern = "/workspaces",
       .name = "workspaces",
       // Any valid key: the answer is narrowed to the key's workspaces below.
       .auth = AuthMode::kAnyWorkspace,
       .handler = [census, auth](const HttpRequest& req, RequestContext&) -> Result<HttpResponse> {
         auto page = PageOnlyQuery(req.query, 50, kMaxPageSize);
         if (!page.ok()) return page.status();
         auto limited = auth->LimitedTo(req);
         if (!limited.ok()) return limited.status();
         auto all = census->CountWorkspaces();
         if (!all.ok()) return all.status();
         const std::vector<WorkspaceCounts> visible = Visible(std::move(*all), *limited);
         const size_t begin = std::min(visible.size(), page->offset());
         const size_t end = std::min(visible.size(), begin + page->size);
         json results = json::array();
         for (size_t i = begin; i < end; ++i) results.push_back(RenderWorkspaceCounts(visible[i]));
         return JsonResponse(200, ListPageBody(std::move(results), visible.size(), page->number,
                                               page->size, "workspaces"));
       }});
}

}  // namespace engram
