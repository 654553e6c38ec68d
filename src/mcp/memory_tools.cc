// The memory_* tools (service_tools.h).
#include <fmt/format.h>

#include <thread>

#include "api/envelope.h"
#include "common/job_status.h"
#include "common/json_reader.h"
#include "common/time_util.h"
#include "core/memory_provenance.h"
#include "mcp/service_tools.h"
#include "mcp/tool_schemas.h"

namespace engram::mcp {

namespace {

using json = nlohmann::json;
namespace s = schema;

// memory_store reports its event's status in the memory API's words.
std::string_view EventStatusName(JobStatus status) {
  return JobStatusName(status, JobVocabulary::kMemoryEvent);
}

json EventStatusWords() {
  json words = json::array();
  for (JobStatus status :
       {JobStatus::kPending, JobStatus::kRunning, JobStatus::kSucceeded, JobStatus::kFailed}) {
    words.push_back(EventStatusName(status));
  }
  return words;
}

json MetadataOf(const std::string& metadata_json) {
  json j = ReadJsonOrDiscarded(metadata_json, kStoredJsonLimits);
  return j.is_object() ? j : json::object();
}

json RenderMemory(const AgentMemory& m) {
  json provenance = ProvenanceToJson(m.provenance_json);
  const int64_t valid_from = ValidFromUs(m, provenance);
  return {{"id", m.id},
          {"memory", m.text},
          {"user_id", m.user_id},
          {"agent_id", m.agent_id},
          {"run_id", m.run_id},
          {"metadata", MetadataOf(m.metadata_json)},
          {"created_at", FormatIsoMicros(m.created_at_us)},
          {"updated_at", FormatIsoMicros(m.updated_at_us)},
          {"valid_from", FormatIsoMicros(valid_from)},
          {"valid_to", IsoOrNull(m.valid_to_us)},
          {"provenance", std::move(provenance)}};
}

// "user alice, agent bot": the scope of a memory, for the text rendering.
std::string ScopeText(const AgentMemory& m) {
  std::string out;
  for (auto [name, value] : {std::pair<const char*, const std::string*>{"user", &m.user_id},
                             {"agent", &m.agent_id},
                             {"run", &m.run_id}}) {
    if (value->empty()) continue;
    if (!out.empty()) out += ", ";
    out += fmt::format("{} {}", name, *value);
  }
  return out;
}

std::string MemoryLine(const AgentMemory& m) {
  if (m.valid_to_us) {
    return fmt::format("[{}] {} ({}; held from {} until {}, then replaced)", m.id, m.text,
                       ScopeText(m), FormatIsoMicros(ValidFromUs(m)),
                       FormatIsoMicros(*m.valid_to_us));
  }
  return fmt::format("[{}] {} ({}; updated {})", m.id, m.text, ScopeText(m),
                     FormatIsoMicros(m.updated_at_us));
}

json NullableString(std::string description) {
  return {{"type", json::array({"string", "null"})}, {"description", std::move(description)}};
}

json MemorySchema(bool with_score) {
  json props = {
      {"id", s::String("memory id, m-...")},
      {"memory", s::String("the memory text")},
      {"user_id", s::String("\"\" when unset")},
      {"agent_id", s::String("\"\" when unset")},
      {"run_id", s::String("\"\" when unset")},
      {"metadata", s::Object("the memory's metadata")},
      {"created_at", s::String("ISO 8601 UTC")},
      {"updated_at", s::String("ISO 8601 UTC")},
      {"valid_from", s::String("ISO 8601 UTC: when this version of the memory began to hold")},
      {"valid_to", NullableString("ISO 8601 UTC: when an update replaced this version (a search "
                                  "about an earlier time shows the version that held then); "
                                  "null for the current version")},
      {"provenance",
       {{"type", json::array({"object", "null"})},
        {"description",
         "where the memory came from: source (extraction, verbatim, api), event_id, extractor, "
         "messages [{index, role, name?, timestamp}], edited_at (api), replaced {text, event_id}; "
         "null if "
         "unknown"}}}};
  std::vector<std::string> required = {"id",     "memory",   "user_id",    "agent_id",
                                       "run_id", "metadata", "created_at", "updated_at"};
  if (with_score) {
    props["score"] = s::Number("relevance, higher is better", 0, 1);
    required.push_back("score");
  }
  return s::Shape(std::move(props), std::move(required));
}

// The scope arguments every memory tool shares.
json ScopeProperties(const MemoryApiLimits& limits) {
  return {{"user_id", s::String("the user the memories are about", limits.max_id_bytes, 1)},
          {"agent_id", s::String("the agent the memories belong to", limits.max_id_bytes, 1)},
          {"run_id", s::String("one run or conversation of the agent", limits.max_id_bytes, 1)}};
}

json MemoryIdProperty(const MemoryApiLimits& limits) {
  return s::String("the memory's id (m-...), as returned by memory_recall or memory_store",
                   limits.max_id_bytes, 1);
}

constexpr const char* kFiltersHelp =
    "optional filter in the V4 grammar: {\"AND\": [...]}, {\"OR\": [...]}, {\"NOT\": {...}}, "
    "{field: value} or {field: {op: value}}; ops eq ne in gt gte lt lte contains icontains *; "
    "fields user_id agent_id run_id session_id created_at updated_at memory_ids keywords "
    "metadata.<key>";

Result<ToolResult> ServiceError(const char* tool, const Status& status) {
  return ServiceFailure(tool, status);
}

ToolResult BadArguments(const char* tool, const Status& status) {
  return ToolResult::Error(fmt::format("Invalid arguments for {}: {}", tool, status.message()));
}

// Waits for an add's event to end, at most `max_wait`: the short first steps catch a verbatim
// add (a few milliseconds), the longer later ones an extraction without spinning.
Result<MemoryEventRecord> WaitForEvent(MemoryService* service, const std::string& workspace,
                                       const std::string& id, std::chrono::milliseconds max_wait) {
  const auto deadline = std::chrono::steady_clock::now() + max_wait;
  std::chrono::microseconds step{200};
  while (true) {
    auto event = service->GetEvent(workspace, id);
    if (!event.ok()) return event.status();
    if (IsFinished(event->status)) return event;
    if (std::chrono::steady_clock::now() >= deadline) return event;
    std::this_thread::sleep_for(step);
    step = std::min<std::chrono::microseconds>(step * 2, std::chrono::milliseconds(50));
  }
}

void AddStore(ToolRegistry& registry, MemoryService* service, const MemoryToolOptions& options) {
  const MemoryApiLimits& limits = options.limits;
  json message =
      s::Closed({{"role", {{"type", "string"}, {"enum", {"user", "assistant", "system"}}}},
                 {"content", s::String("what was said", limits.max_message_bytes)}},
                {"role", "content"});
  json props = ScopeProperties(limits);
  props["messages"] = {
      {"description",
       "the conversation to remember: one string (a user message) or an array of {role, "
       "content}; give messages or text"},
      {"anyOf", json::array({s::String("", 0, 1),
                             {{"type", "array"},
                              {"items", message},
                              {"minItems", 1},
                              {"maxItems", limits.max_messages}}})}};
  props["text"] = s::String("one fact to remember, stored as a user message; give text or messages",
                            limits.max_message_bytes, 1);
  props["metadata"] = s::Object("JSON object stored with the memories (at most 64 KiB)");
  props["infer"] = s::Boolean(
      "true: extract facts and reconcile them with existing memories; false: store each message "
      "verbatim",
      true);
  props["timestamp"] = {
      {"type", json::array({"number", "string"})},
      {"description", "when the conversation happened: Unix seconds or ISO 8601"}};
  props["expiration_date"] = s::String("YYYY-MM-DD: hidden after that day", 10, 10);
  props["wait"] = s::Boolean(
      "wait (bounded) until the memories are stored and searchable, and return them", true);
  json output = s::Shape(
      {{"event_id", s::String("the add's event, me-...")},
       {"status", {{"type", "string"}, {"enum", EventStatusWords()}}},
       {"results", s::ArrayOf(s::String("memory id"), "memories added, updated or deleted")},
       {"events", s::ArrayOf(s::Object("{memory_id, event: ADD|UPDATE|DELETE|NONE, memory, "
                                       "previous_memory}"))}},
      {"event_id", "status", "results", "events"});
  const std::chrono::milliseconds max_wait = options.max_store_wait;
  registry.Add(Tool{
      .name = "memory_store",
      .title = "Store memories",
      .description =
          "Remember something about a user, agent or run. Give the conversation (messages) or a "
          "single text, and at least one of user_id, agent_id, run_id. With infer (default) facts "
          "are extracted and merged with what is already known (duplicates are not stored twice, "
          "contradicted facts are updated); with infer false each message is stored verbatim.",
      .input_schema = s::Closed(props),
      .output_schema = output,
      .hints = {.read_only = false, .destructive = false, .idempotent = false},
      .handler = [service, limits, max_wait](const json& args,
                                             const ToolContext& ctx) -> Result<ToolResult> {
        const bool has_text = args.contains("text");
        if (has_text == args.contains("messages")) {
          return ToolResult::Error(
              "Invalid arguments for memory_store: give exactly one of messages or text");
        }
        json body = args;
        body.erase("wait");
        if (has_text) {
          body["messages"] = std::move(body["text"]);
          body.erase("text");
        }
        auto request = ParseMemoryAdd(DumpJson(body), ctx.workspace, limits);
        if (!request.ok()) return BadArguments("memory_store", request.status());
        auto id = service->Add(*request);
        if (!id.ok()) return ServiceError("memory_store", id.status());
        ToolResult result;
        result.structured = {{"event_id", *id},
                             {"status", EventStatusName(JobStatus::kPending)},
                             {"results", json::array()},
                             {"events", json::array()}};
        if (!args.value("wait", true)) {
          result.text = fmt::format("Accepted as event {}; the memories are being processed.", *id);
          return result;
        }
        auto event = WaitForEvent(service, ctx.workspace, *id, max_wait);
        if (!event.ok()) return ServiceError("memory_store", event.status());
        result.structured["status"] = EventStatusName(event->status);
        if (event->status == JobStatus::kFailed) {
          return ToolResult::Error(fmt::format(
              "memory_store failed: event {}: {}; nothing was stored", *id, event->error_message));
        }
        if (event->status != JobStatus::kSucceeded) {
          result.text =
              fmt::format("Event {} is still {}; its memories become searchable when it finishes.",
                          *id, EventStatusName(event->status));
          return result;
        }
        json outcome = ReadJsonOrDiscarded(event->result_json, kStoredJsonLimits);
        if (outcome.is_object()) {
          if (outcome.contains("results") && outcome["results"].is_array()) {
            result.structured["results"] = outcome["results"];
          }
          if (outcome.contains("events") && outcome["events"].is_array()) {
            result.structured["events"] = outcome["events"];
          }
        }
        std::string text = fmt::format("Stored (event {}).", *id);
        size_t changes = 0;
        for (const json& e : result.structured["events"]) {
          if (!e.is_object()) continue;
          const std::string kind = e.value("event", "");
          const std::string memory = e.contains("memory") && e["memory"].is_string()
                                         ? e["memory"].get<std::string>()
                                         : std::string();
          text += fmt::format("\n{} [{}] {}", kind, e.value("memory_id", ""), memory);
          if (kind != "NONE") ++changes;
        }
        if (changes == 0) text += "\nNothing new to remember.";
        result.text = std::move(text);
        return result;
      }});
}

void AddRecall(ToolRegistry& registry, MemoryService* service, const MemoryApiLimits& limits) {
  json props = ScopeProperties(limits);
  props["query"] = s::String("what to recall, in natural language", limits.max_query_bytes, 1);
  props["filters"] = s::Object(kFiltersHelp);
  props["top_k"] = s::Integer("how many memories at most (default 10)", 1, limits.max_top_k);
  props["threshold"] = s::Number("drop memories scoring below this (0..1)", 0, 1);
  props["reference_date"] = {
      {"type", json::array({"string", "number"})},
      {"description",
       "\"now\" for the query's relative dates (\"last week\", \"last year\"): an ISO 8601 date "
       "or date-time, or Unix seconds. A memory an update replaced answers a query about its "
       "time with the version that held then (valid_to set)."}};
  registry.Add(Tool{
      .name = "memory_recall",
      .title = "Recall memories",
      .description =
          "Search memories relevant to a query (keyword and semantic search, fused), best first. "
          "Confine it with user_id / agent_id / run_id or a filter naming them.",
      .input_schema = s::Closed(props, {"query"}),
      .output_schema = s::Shape({{"results", s::ArrayOf(MemorySchema(true))}}, {"results"}),
      .hints = {.read_only = true, .destructive = false, .idempotent = true},
      .ready = WorkspaceLoadedProbe(service),
      .handler = [service, limits](const json& args, const ToolContext& ctx) -> Result<ToolResult> {
        auto request = ParseMemorySearch(DumpJson(args), ctx.workspace, limits);
        if (!request.ok()) return BadArguments("memory_recall", request.status());
        auto hits = service->Search(*request);
        if (!hits.ok()) return ServiceError("memory_recall", hits.status());
        ToolResult result;
        json results = json::array();
        std::string text = hits->empty() ? "No memories matched."
                                         : fmt::format("{} memories found:", hits->size());
        int rank = 0;
        for (const MemoryHit& h : *hits) {
          json item = RenderMemory(h.memory);
          item["score"] = h.score;
          results.push_back(std::move(item));
          text += fmt::format("\n{}. {:.3f} {}", ++rank, h.score, MemoryLine(h.memory));
        }
        result.structured = {{"results", std::move(results)}};
        result.text = std::move(text);
        return result;
      }});
}

void AddById(ToolRegistry& registry, MemoryService* service, const MemoryApiLimits& limits) {
  registry.Add(
      Tool{.name = "memory_get",
           .title = "Get a memory",
           .description = "Read one memory by its id.",
           .input_schema = s::Closed({{"memory_id", MemoryIdProperty(limits)}}, {"memory_id"}),
           .output_schema = MemorySchema(false),
           .hints = {.read_only = true, .destructive = false, .idempotent = true},
           .ready = WorkspaceLoadedProbe(service),
           .handler = [service](const json& args, const ToolContext& ctx) -> Result<ToolResult> {
             auto m = service->Get(ctx.workspace, args.at("memory_id").get<std::string>());
             if (!m.ok()) return ServiceError("memory_get", m.status());
             ToolResult result;
             result.structured = RenderMemory(*m);
             result.text = MemoryLine(*m);
             return result;
           }});
  registry.Add(Tool{
      .name = "memory_update",
      .title = "Update a memory",
      .description =
          "Replace a memory's text and/or merge keys into its metadata (at least one). The old "
          "text stays in memory_history.",
      .input_schema = s::Closed({{"memory_id", MemoryIdProperty(limits)},
                                 {"text", s::String("the new text", limits.max_memory_bytes, 1)},
                                 {"metadata", s::Object("keys to merge into the metadata")}},
                                {"memory_id"}),
      .output_schema = MemorySchema(false),
      .hints = {.read_only = false, .destructive = true, .idempotent = true},
      .handler = [service, limits](const json& args, const ToolContext& ctx) -> Result<ToolResult> {
        json body = args;
        const std::string id = body.at("memory_id").get<std::string>();
        body.erase("memory_id");
        auto request = ParseMemoryUpdate(DumpJson(body), ctx.workspace, id, limits);
        if (!request.ok()) return BadArguments("memory_update", request.status());
        auto m = service->Update(*request);
        if (!m.ok()) return ServiceError("memory_update", m.status());
        ToolResult result;
        result.structured = RenderMemory(*m);
        result.text = "Updated: " + MemoryLine(*m);
        return result;
      }});
  registry.Add(
      Tool{.name = "memory_forget",
           .title = "Forget a memory",
           .description = "Delete one memory by its id; it is gone from recall at once.",
           .input_schema = s::Closed({{"memory_id", MemoryIdProperty(limits)}}, {"memory_id"}),
           .output_schema = s::Shape(
               {{"memory_id", s::String("the deleted memory")}, {"deleted", {{"type", "boolean"}}}},
               {"memory_id", "deleted"}),
           .hints = {.read_only = false, .destructive = true, .idempotent = true},
           .handler = [service](const json& args, const ToolContext& ctx) -> Result<ToolResult> {
             const std::string id = args.at("memory_id").get<std::string>();
             if (Status st = service->Delete(ctx.workspace, id); !st.ok()) {
               return ServiceError("memory_forget", st);
             }
             ToolResult result;
             result.structured = {{"memory_id", id}, {"deleted", true}};
             result.text = fmt::format("Memory {} deleted.", id);
             return result;
           }});
  registry.Add(Tool{
      .name = "memory_history",
      .title = "Memory history",
      .description =
          "Every change of one memory (ADD, UPDATE, DELETE) with old and new text, oldest first.",
      .input_schema = s::Closed({{"memory_id", MemoryIdProperty(limits)}}, {"memory_id"}),
      .output_schema =
          s::Shape({{"results",
                     s::ArrayOf(s::Shape(
                         {{"memory_id", s::String("")},
                          {"event", {{"type", "string"}, {"enum", {"ADD", "UPDATE", "DELETE"}}}},
                          {"old_memory", NullableString("text before")},
                          {"new_memory", NullableString("text after")},
                          {"old_metadata", {{"type", json::array({"object", "null"})}}},
                          {"new_metadata", {{"type", json::array({"object", "null"})}}},
                          {"event_id", s::String("the add that made it, \"\" for direct changes")},
                          {"created_at", s::String("ISO 8601 UTC")},
                          {"valid_from", NullableString("when the version this entry wrote began "
                                                        "to hold; null for DELETE")},
                          {"valid_to", NullableString("when that version was replaced or "
                                                      "deleted; null while it holds")}},
                         {"memory_id", "event", "created_at"}))}},
                   {"results"}),
      .hints = {.read_only = true, .destructive = false, .idempotent = true},
      .ready = WorkspaceLoadedProbe(service),
      .handler = [service](const json& args, const ToolContext& ctx) -> Result<ToolResult> {
        const std::string id = args.at("memory_id").get<std::string>();
        auto history = service->History(ctx.workspace, id);
        if (!history.ok()) return ServiceError("memory_history", history.status());
        auto text_or_null = [](const std::optional<std::string>& v) {
          return v ? json(*v) : json(nullptr);
        };
        auto metadata_or_null = [](const std::optional<std::string>& v) {
          return v ? MetadataOf(*v) : json(nullptr);
        };
        json results = json::array();
        std::string text = fmt::format("History of {}:", id);
        const std::vector<VersionTime> times = VersionTimes(*history);
        for (size_t i = 0; i < history->size(); ++i) {
          const HistoryRecord& h = (*history)[i];
          results.push_back({{"memory_id", h.memory_id},
                             {"event", h.event},
                             {"old_memory", text_or_null(h.old_text)},
                             {"new_memory", text_or_null(h.new_text)},
                             {"old_metadata", metadata_or_null(h.old_metadata_json)},
                             {"new_metadata", metadata_or_null(h.new_metadata_json)},
                             {"event_id", h.event_id},
                             {"created_at", FormatIsoMicros(h.at_us)},
                             {"valid_from", IsoOrNull(times[i].valid_from_us)},
                             {"valid_to", IsoOrNull(times[i].valid_to_us)}});
          text += fmt::format("\n{} {}: {} -> {}", FormatIsoMicros(h.at_us), h.event,
                              h.old_text.value_or("-"), h.new_text.value_or("-"));
        }
        ToolResult result;
        result.structured = {{"results", std::move(results)}};
        result.text = std::move(text);
        return result;
      }});
}

// page_number and page_size, the arguments of a listing of `items`.
void AddPagingProperties(json& props, std::string_view items, const MemoryApiLimits& limits) {
  props["page_number"] = s::Integer("page, from 1 (default 1)", 1, 1000000);
  props["page_size"] =
      s::Integer(fmt::format("{} per page (default 50)", items), 1, limits.max_page_size);
}

// The output schema of a page of `item`s (the REST listings' ListPageBody).
json PageSchema(json item) {
  return s::Shape({{"results", s::ArrayOf(std::move(item))},
                   {"total", {{"type", "integer"}}},
                   {"page_number", {{"type", "integer"}}},
                   {"page_size", {{"type", "integer"}}}},
                  {"results", "total", "page_number", "page_size"});
}

// What a listing tool's arguments name: the scope (and filters) and the page.
struct ScopedPage {
  MemoryFilter filter;
  size_t page = 1;
  size_t size = 50;
};

// The search parser reads the scope ids and filters with the search's rules (ids' limits, the
// filter grammar, "some scope is required"); only its filter is used.
Result<ScopedPage> ReadScopedPage(const json& args, const std::string& workspace,
                                  const MemoryApiLimits& limits) {
  json body = args;
  body.erase("page_number");
  body.erase("page_size");
  body["query"] = "*";
  auto request = ParseMemorySearch(DumpJson(body), workspace, limits);
  if (!request.ok()) return request.status();
  return ScopedPage{std::move(request->filter), args.value("page_number", size_t{1}),
                    args.value("page_size", size_t{50})};
}

void AddList(ToolRegistry& registry, MemoryService* service, const MemoryApiLimits& limits) {
  json props = ScopeProperties(limits);
  props["filters"] = s::Object(kFiltersHelp);
  AddPagingProperties(props, "memories", limits);
  registry.Add(Tool{
      .name = "memory_list",
      .title = "List memories",
      .description =
          "List a scope's memories, newest first, a page at a time. Give at least one of user_id, "
          "agent_id, run_id (or a filter naming them).",
      .input_schema = s::Closed(props),
      .output_schema = PageSchema(MemorySchema(false)),
      .hints = {.read_only = true, .destructive = false, .idempotent = true},
      .ready = WorkspaceLoadedProbe(service),
      .handler = [service, limits](const json& args, const ToolContext& ctx) -> Result<ToolResult> {
        auto q = ReadScopedPage(args, ctx.workspace, limits);
        if (!q.ok()) return BadArguments("memory_list", q.status());
        size_t total = 0;
        auto list = service->List(ctx.workspace, q->filter, q->page, q->size, &total);
        if (!list.ok()) return ServiceError("memory_list", list.status());
        json results = json::array();
        std::string text =
            fmt::format("{} memories in all; page {} ({} shown):", total, q->page, list->size());
        for (const AgentMemory& m : *list) {
          results.push_back(RenderMemory(m));
          text += "\n" + MemoryLine(m);
        }
        ToolResult result;
        result.structured = ListPageBody(std::move(results), total, q->page, q->size);
        result.text = std::move(text);
        return result;
      }});
}

void AddEntities(ToolRegistry& registry, MemoryService* service, const MemoryApiLimits& limits) {
  json props = ScopeProperties(limits);
  AddPagingProperties(props, "entities", limits);
  registry.Add(Tool{
      .name = "memory_entities",
      .title = "Who and what the memories mention",
      .description =
          "List the people, places, organisations and products (as names) and the code "
          "identifiers a scope's memories mention, most mentioned first, with their aliases "
          "(\"Mel\" for \"Melanie\"), how many memories mention each, and when first and last. "
          "Give at least one of user_id, agent_id, run_id.",
      .input_schema = s::Closed(props),
      .output_schema = PageSchema(
          s::Shape({{"name", s::String("the most frequent spelling")},
                    {"kind", {{"type", "string"}, {"enum", {"name", "identifier"}}}},
                    {"aliases", s::ArrayOf(s::String("another spelling or short form"))},
                    {"memory_count", {{"type", "integer"}}},
                    {"first_seen", s::String("ISO 8601 UTC")},
                    {"last_seen", s::String("ISO 8601 UTC")}},
                   {"name", "kind", "aliases", "memory_count", "first_seen", "last_seen"})),
      .hints = {.read_only = true, .destructive = false, .idempotent = true},
      .ready = WorkspaceLoadedProbe(service),
      .handler = [service, limits](const json& args, const ToolContext& ctx) -> Result<ToolResult> {
        auto q = ReadScopedPage(args, ctx.workspace, limits);
        if (!q.ok()) return BadArguments("memory_entities", q.status());
        size_t total = 0;
        auto entities = service->NamedEntities(ctx.workspace, q->filter, q->page, q->size, &total);
        if (!entities.ok()) return ServiceError("memory_entities", entities.status());
        json results = json::array();
        std::string text = fmt::format("{} entities in all; page {} ({} shown):", total, q->page,
                                       entities->size());
        for (const CatalogEntity& e : *entities) {
          results.push_back(RenderNamedEntity(e));
          text += fmt::format("\n{} ({}, {} memories)", e.name, EntityKindName(e.kind), e.texts);
        }
        ToolResult result;
        result.structured = ListPageBody(std::move(results), total, q->page, q->size);
        result.text = std::move(text);
        return result;
      }});
}

}  // namespace

void AddMemoryTools(ToolRegistry& registry, MemoryService* service, MemoryToolOptions options) {
  AddStore(registry, service, options);
  AddRecall(registry, service, options.limits);
  AddById(registry, service, options.limits);
  AddList(registry, service, options.limits);
  AddEntities(registry, service, options.limits);
}

}  // namespace engram::mcp
