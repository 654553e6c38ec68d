// The Agentic Memory V3 skill endpoints (docs/api/README.md, "Skills (V3)"): JSON <-> SkillService.
// Responses use the V3 envelope {"request_id", "latency", "status": "OK", "result": {...}}.
// Thread-safety: stateless functions; the registered handlers are safe to run concurrently.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "api/router.h"
#include "core/skill_service.h"

namespace engram {

struct SkillApiLimits {
  size_t max_id_bytes = 256;  // user_id, agent_id
  size_t max_messages = 1000;
  size_t max_message_bytes = 64 << 10;
  size_t max_query_bytes = 16 << 10;
  size_t max_zip_bytes = 32 << 20;  // decoded zip_base64
  int max_size = 100;               // search `size`
  size_t max_name_bytes = 128;
  size_t max_description_bytes = 4096;
  size_t max_tags = 64;
  size_t max_tag_bytes = 256;
  size_t max_update_files = 256;
  size_t max_file_bytes = 4 << 20;  // one file's content in an update
  size_t max_path_bytes = 512;
};

// Parsing, exposed for tests. `workspace` is the path's workspace.
Result<SkillAddRequest> ParseSkillAdd(std::string_view body, const std::string& workspace,
                                      const SkillApiLimits& limits);
Result<SkillImportRequest> ParseSkillImport(std::string_view body, const std::string& workspace,
                                            const SkillApiLimits& limits);
Result<SkillSearchRequest> ParseSkillSearch(std::string_view body, const std::string& workspace,
                                            const SkillApiLimits& limits);
// The `user_id` query parameter of GET and DELETE `skills/{skill_id}`: nullopt when absent (the
// reference's calls carry none and act for the workspace), else the owner the call must match.
Result<std::optional<std::string>> ParseSkillOwner(std::string_view query,
                                                   const SkillApiLimits& limits);
Result<SkillUpdateRequest> ParseSkillUpdate(std::string_view body, const std::string& workspace,
                                            const std::string& id, const SkillApiLimits& limits);

void RegisterSkillRoutes(Router& router, SkillService* service, SkillApiLimits limits);

}  // namespace engram
