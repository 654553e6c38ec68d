#include "api/mem0/mem0_workspace.h"

namespace engram {

Result<std::string> ResolveMem0Workspace(const HttpRequest& request,
                                         const std::map<std::string, std::string>& query,
                                         const nlohmann::json* body, const ApiKeyAuth& auth,
                                         const std::string& default_workspace) {
  std::string workspace;
  bool named = false;
  if (auto it = query.find("project_id"); it != query.end() && !it->second.empty()) {
    workspace = it->second;
    named = true;
  } else if (body != nullptr && body->is_object()) {
    if (auto p = body->find("project_id"); p != body->end() && !p->is_null()) {
      // mem0's clients type project_id as a string or a number; a whole number names the
      // workspace spelled by its digits.
      if (p->is_number_integer()) {
        workspace = p->dump();
      } else if (p->is_string()) {
        workspace = p->get<std::string>();
      } else {
        return Status::InvalidParameter("project_id must be a string or a whole number");
      }
      named = !workspace.empty();
    }
  }
  if (!named) {
    auto sole = auth.SoleWorkspace(request);
    workspace = sole ? *sole : default_workspace;
  }
  if (!IsValidWorkspaceName(workspace)) {
    return Status::InvalidParameter(
        "project_id must be 1-64 characters of letters, digits, '-', '_' or '.' (it names an "
        "Engram workspace)");
  }
  ENGRAM_RETURN_IF_ERROR(auth.Check(request, workspace));
  return workspace;
}

}  // namespace engram
