// The knowledge-base endpoints (docs/api/README.md "Knowledge bases (V3, envelope)"): JSON <->
// KbService, answered in the V3 envelope {"request_id", "latency", "status": "OK", "result"}.
// Thread-safety: stateless functions; the registered handlers are safe to run concurrently.
#pragma once

#include <nlohmann/json.hpp>
#include <string_view>

#include "api/router.h"
#include "core/kb_service.h"

namespace engram {

struct KbApiLimits {
  size_t max_id_bytes = 256;  // kb_id and doc.id
  size_t max_title_bytes = 1024;
  size_t max_url_bytes = 4096;
  size_t max_query_bytes = 16 << 10;
  int max_top_k = 1000;  // docs/api/README.md "Common" limits
  int max_page_size = 100;
  // A document uploaded by content (type CONTENT), once decoded (--kb-max-doc-bytes).
  size_t max_upload_bytes = 64u << 20;
};

// Parsing, exposed for tests and fuzzing.
Result<KbUploadRequest> ParseKbUpload(std::string_view body, const std::string& workspace,
                                      const std::string& kb_id, const KbApiLimits& limits);

// One search hit as both the REST answer and the MCP tool result show it:
// {doc_id, title, chunk, position, score}.
nlohmann::json RenderKbHit(const KbHit& hit);

void RegisterKbRoutes(Router& router, KbService* service, KbApiLimits limits);

}  // namespace engram
