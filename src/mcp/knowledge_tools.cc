// The knowledge_search tool (service_tools.h).
#include <fmt/format.h>

#include "mcp/service_tools.h"
#include "mcp/tool_schemas.h"

namespace engram::mcp {

namespace {
using json = nlohmann::json;
namespace s = schema;

// A knowledge base id is a path segment of the REST API: the same characters are refused here,
// so both doors name the same knowledge bases.
Status CheckKbId(const std::string& id) {
  for (unsigned char c : id) {
    if (c < 0x20 || c == 0x7F || c == '/' || c == '\\' || c == '?' || c == '#') {
      return Status::InvalidParameter(
          "kb_id must not contain control characters or any of / \\ ? #");
    }
  }
  return Status::Ok();
}

}  // namespace

void AddKnowledgeTools(ToolRegistry& registry, KbService* service, KbApiLimits limits) {
  json props = {
      {"kb_id", s::String("the knowledge base to search", limits.max_id_bytes, 1)},
      {"query", s::String("what to look for, in natural language", limits.max_query_bytes, 1)},
      {"top_k", s::Integer("how many chunks at most (default 10)", 1, limits.max_top_k)}};
  json hit = s::Shape(
      {{"doc_id", s::String("the document")},
       {"title", s::String("the document's title")},
       {"chunk", s::String("the matching passage")},
       {"position", {{"type", "integer"}, {"description", "chunk number in the document"}}},
       {"score", s::Number("relevance, higher is better", 0, 1)}},
      {"doc_id", "title", "chunk", "position", "score"});
  registry.Add(
      Tool{.name = "knowledge_search",
           .title = "Search a knowledge base",
           .description =
               "Find passages (chunks) of a knowledge base's documents relevant to a query, best "
               "first (keyword and semantic search, fused).",
           .input_schema = s::Closed(props, {"kb_id", "query"}),
           .output_schema = s::Shape({{"results", s::ArrayOf(hit)}}, {"results"}),
           .hints = {.read_only = true, .destructive = false, .idempotent = true},
           .ready =
               [service](const json& args, const ToolContext& ctx) {
                 const auto kb = args.find("kb_id");
                 return kb != args.end() && kb->is_string() &&
                        service->KnowledgeBaseLoaded(ctx.workspace, kb->get<std::string>());
               },
           .handler = [service](const json& args, const ToolContext& ctx) -> Result<ToolResult> {
             const std::string kb_id = args.at("kb_id").get<std::string>();
             if (Status st = CheckKbId(kb_id); !st.ok()) {
               return ToolResult::Error("Invalid arguments for knowledge_search: " + st.message());
             }
             const std::string query = args.at("query").get<std::string>();
             if (query.find_first_not_of(" \t\r\n") == std::string::npos) {
               return ToolResult::Error(
                   "Invalid arguments for knowledge_search: query must not be blank");
             }
             auto hits = service->Search(ctx.workspace, kb_id, query,
                                         static_cast<size_t>(args.value("top_k", 10)));
             if (!hits.ok()) return ServiceFailure("knowledge_search", hits.status());
             json results = json::array();
             std::string text = hits->empty() ? "No passages matched."
                                              : fmt::format("{} passages found:", hits->size());
             int rank = 0;
             for (const KbHit& h : *hits) {
               results.push_back(RenderKbHit(h));
               text += fmt::format("\n{}. {:.3f} [{} \"{}\" #{}]\n{}", ++rank, h.score, h.doc_id,
                                   h.title, h.position, h.chunk);
             }
             ToolResult result;
             result.structured = {{"results", std::move(results)}};
             result.text = std::move(text);
             return result;
           }});
}

}  // namespace engram::mcp
