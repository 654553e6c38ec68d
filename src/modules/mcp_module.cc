#include "modules/mcp_module.h"

#include <string>

#include "common/build_info.h"
#include "modules/knowledge_module.h"
#include "modules/memory_module.h"
#include "modules/skills_module.h"

namespace engram {

std::unique_ptr<mcp::McpService> BuildMcpService(const ServeOptions& options, McpModuleDeps deps) {
  mcp::McpServiceOptions mcp_options{.version = std::string(GetBuildInfo().version)};
  mcp_options.memory.limits = deps.memories->limits();
  mcp_options.knowledge = deps.knowledge->limits();
  mcp_options.skills.limits.max_zip_bytes = deps.skills->limits().max_zip_bytes;
  mcp_options.http.max_message_bytes = options.max_body_bytes;
  mcp_options.http.max_batch_messages = options.mcp_max_batch;
  mcp_options.http.sessions.max_sessions = options.mcp_max_sessions;
  mcp_options.http.sessions.max_per_credential = options.mcp_sessions_per_key;
  mcp_options.http.sessions.max_per_client = options.mcp_sessions_per_client;
  return std::make_unique<mcp::McpService>(deps.memories->service(), deps.knowledge->service(),
                                           deps.skills->service(), std::move(mcp_options));
}

}  // namespace engram
