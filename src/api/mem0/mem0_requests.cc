#include "api/mem0/mem0_requests.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cstdint>
#include <iterator>
#include <optional>
#include <set>
#include <string_view>

#include "api/conversation_input.h"
#include "api/json_input.h"
#include "api/memory_fields.h"
#include "common/time_util.h"
#include "extract/memory_categorizer.h"

namespace engram {

namespace {

using json = nlohmann::json;

constexpr const char* kEntityFields[] = {"user_id", "agent_id", "app_id", "run_id"};
constexpr size_t kMaxCategoryNameBytes = 64;
constexpr size_t kMaxCategoryDescriptionBytes = 256;
constexpr size_t kMaxInstructionsBytes = 4096;
constexpr size_t kMaxFeedbackReasonBytes = 1024;
constexpr size_t kIsoDateLength = 10;  // "2024-05-01"
constexpr int64_t kMicrosPerDay = 86'400'000'000;

const char* kNoEntity =
    "at least one of user_id, agent_id, app_id, run_id is required (in filters, e.g. "
    "{\"filters\": {\"user_id\": \"alice\"}})";

// An equality that is never mem0's "*" wildcard: a top-level id of "*" is that literal id.
json Equals(const std::string& field, const std::string& value) {
  return json{{field, json{{"eq", value}}}};
}

// The conjunction of `parts` as one filter (a single part as itself, none as {}).
Result<MemoryFilter> ParseConjunction(json parts, const MemoryApiLimits& limits) {
  if (parts.empty()) return MemoryFilter();
  json combined = parts.size() == 1 ? std::move(parts[0]) : json{{"AND", std::move(parts)}};
  return MemoryFilter::Parse(combined, "filters", limits.filter);
}

// A boolean mem0 feature Engram lacks: false or absent is fine, true is refused naming it.
Status RefuseIfTrue(const json& body, const char* name, const char* feature) {
  auto v = GetBool(body, name);
  if (!v.ok()) return v.status();
  if (v->value_or(false)) {
    return Status(StatusCode::kNotImplemented,
                  fmt::format("{} ({}: true) is not supported by Engram", feature, name));
  }
  return Status::Ok();
}

// Reads the filter parts every list and search body may carry: `filters` (validated on its own
// first, so errors name its own paths), top-level entity ids and `categories` (any of).
Status CollectFilterParts(const json& body, const MemoryApiLimits& limits, json* parts) {
  if (auto f = body.find("filters"); f != body.end() && !f->is_null()) {
    if (!f->is_object()) {
      return Status::InvalidParameter(
          fmt::format("filters must be an object, got {}", JsonTypeName(*f)));
    }
    auto alone = MemoryFilter::Parse(*f, "filters", limits.filter);
    if (!alone.ok()) return alone.status();
    if (!f->empty()) parts->push_back(*f);
  }
  for (const char* field : kEntityFields) {
    std::string value;
    ENGRAM_RETURN_IF_ERROR(ReadIdFields(body, {field}, limits.max_id_bytes, {&value}));
    if (!value.empty()) parts->push_back(Equals(field, value));
  }
  if (auto c = body.find("categories"); c != body.end() && !c->is_null()) {
    if (!c->is_array()) {
      return Status::InvalidParameter(
          fmt::format("categories must be an array of strings, got {}", JsonTypeName(*c)));
    }
    for (size_t i = 0; i < c->size(); ++i) {
      if (!(*c)[i].is_string()) {
        return Status::InvalidParameter(fmt::format("categories[{}] must be a string", i));
      }
    }
    if (!c->empty()) parts->push_back(json{{"categories", json{{"in", *c}}}});
  }
  return Status::Ok();
}

Result<std::vector<CategorySpec>> ReadCustomCategories(const json& body) {
  std::vector<CategorySpec> out;
  auto it = body.find("custom_categories");
  if (it == body.end() || it->is_null()) return out;
  if (!it->is_array()) {
    return Status::InvalidParameter(fmt::format(
        "custom_categories must be an array of {{\"name\": \"description\"}} objects, got {}",
        JsonTypeName(*it)));
  }
  // The service's own bound (MemoryCategorizer::Validate checks it again for every caller); read
  // here first so a long list is refused before its entries are.
  if (it->size() > MemoryCategorizer::kMaxCategories) {
    return Status::InvalidParameter(fmt::format("custom_categories has {} entries, at most {}",
                                                it->size(), MemoryCategorizer::kMaxCategories));
  }
  std::set<std::string> names;
  for (size_t i = 0; i < it->size(); ++i) {
    const json& entry = (*it)[i];
    if (!entry.is_object() || entry.size() != 1 || !entry.begin().value().is_string()) {
      return Status::InvalidParameter(
          fmt::format("custom_categories[{}] must be one {{\"name\": \"description\"}} pair", i));
    }
    CategorySpec spec{entry.begin().key(), entry.begin().value().get<std::string>()};
    if (IsBlank(spec.name) || spec.name.size() > kMaxCategoryNameBytes || !IsValidUtf8(spec.name)) {
      return Status::InvalidParameter(fmt::format(
          "custom_categories[{}]: the name must be 1-{} bytes of UTF-8", i, kMaxCategoryNameBytes));
    }
    if (spec.description.size() > kMaxCategoryDescriptionBytes || !IsValidUtf8(spec.description)) {
      return Status::InvalidParameter(
          fmt::format("custom_categories[{}]: the description must be at most {} bytes of UTF-8", i,
                      kMaxCategoryDescriptionBytes));
    }
    if (!names.insert(spec.name).second) {
      return Status::InvalidParameter(
          fmt::format("custom_categories[{}]: category {} is listed twice", i, spec.name));
    }
    out.push_back(std::move(spec));
  }
  return out;
}

}  // namespace

Result<Mem0Add> ParseMem0Add(const json& body, const std::string& workspace,
                             const MemoryApiLimits& limits, bool follows_instructions) {
  Mem0Add add;
  MemoryAddRequest& req = add.request;
  req.workspace = workspace;
  auto messages = ParseConversation(body, {limits.max_messages, limits.max_message_bytes});
  if (!messages.ok()) return messages.status();
  req.messages = std::move(*messages);
  ENGRAM_RETURN_IF_ERROR(ReadIdFields(body, {"user_id", "agent_id", "app_id", "run_id"},
                                      limits.max_id_bytes,
                                      {&req.user_id, &req.agent_id, &req.app_id, &req.run_id}));
  if (req.user_id.empty() && req.agent_id.empty() && req.app_id.empty() && req.run_id.empty()) {
    return Status::InvalidParameter(
        "at least one of user_id, agent_id, app_id, run_id is required");
  }
  auto metadata = ReadMetadataField(body, limits.max_metadata_bytes);
  if (!metadata.ok()) return metadata.status();
  req.metadata_json = std::move(*metadata);
  auto infer = GetBool(body, "infer");
  if (!infer.ok()) return infer.status();
  req.infer = infer->value_or(true);
  auto async_mode = GetBool(body, "async_mode");
  if (!async_mode.ok()) return async_mode.status();
  add.async_mode = async_mode->value_or(true);
  auto ts = ReadTimestampField(body);
  if (!ts.ok()) return ts.status();
  req.timestamp_us = *ts;
  auto expires = ReadExpirationField(body);
  if (!expires.ok()) return expires.status();
  req.expires_at_us = *expires;
  auto categories = ReadCustomCategories(body);
  if (!categories.ok()) return categories.status();
  req.custom_categories = std::move(*categories);
  auto instructions =
      GetString(body, "custom_instructions", "custom_instructions",
                {.required = false, .allow_empty = true, .max_bytes = kMaxInstructionsBytes});
  if (!instructions.ok()) return instructions.status();
  if (*instructions && !IsBlank(**instructions)) {
    if (!IsValidUtf8(**instructions)) {
      return Status::InvalidParameter("custom_instructions must be valid UTF-8");
    }
    // With infer: false nothing is extracted, so instructions steer nothing and are accepted
    // whatever the extractor (mem0's clients send them with every add once configured).
    if (req.infer && !follows_instructions) {
      return Status::InvalidParameter(
          "custom_instructions need the LLM extractor (--extractor llm with --llm-url); the "
          "built-in rule-based extractor cannot follow instructions");
    }
    if (req.infer) req.custom_instructions = **instructions;
  }
  ENGRAM_RETURN_IF_ERROR(RefuseIfTrue(body, "enable_graph", "graph memory"));
  ENGRAM_RETURN_IF_ERROR(RefuseIfTrue(body, "immutable", "immutable memories"));
  for (const char* name : {"includes", "excludes"}) {
    auto v = GetString(body, name, name, {.required = false, .allow_empty = true});
    if (!v.ok()) return v.status();
    if (*v && !IsBlank(**v)) {
      return Status(StatusCode::kNotImplemented,
                    fmt::format("extraction {} rules ({}) are not supported by Engram; use "
                                "custom_instructions with an LLM extractor",
                                name, name));
    }
  }
  return add;
}

Result<Mem0Search> ParseMem0Search(const json& body, const std::string& workspace,
                                   const MemoryApiLimits& limits, bool v3) {
  Mem0Search out;
  MemorySearchRequest& req = out.request;
  req.workspace = workspace;
  auto query = GetString(body, "query", "query", {.max_bytes = limits.max_query_bytes});
  if (!query.ok()) return query.status();
  if (!IsValidUtf8(**query)) return Status::InvalidParameter("query must be valid UTF-8");
  req.query = **query;
  json parts = json::array();
  ENGRAM_RETURN_IF_ERROR(CollectFilterParts(body, limits, &parts));
  auto filter = ParseConjunction(std::move(parts), limits);
  if (!filter.ok()) return filter.status();
  req.filter = std::move(*filter);
  if (!req.filter.ScopeKeys()) return Status::InvalidParameter(kNoEntity);
  // top_k (2.x and 3.x) or limit (the first REST generation); top_k wins.
  for (const char* name : {"limit", "top_k"}) {
    auto k = GetInt(body, name, name, 1, limits.max_top_k, false);
    if (!k.ok()) return k.status();
    if (*k) req.top_k = static_cast<size_t>(**k);
  }
  auto threshold = ReadThresholdField(body);
  if (!threshold.ok()) return threshold.status();
  if (*threshold) req.threshold = **threshold;
  auto reference = GetTime(body, "reference_date");
  if (!reference.ok()) return reference.status();
  req.reference_us = *reference;
  // Hybrid retrieval always includes keyword (BM25) matching, and the configured reranker (if
  // any) always runs: these only need to be well-formed.
  for (const char* name : {"rerank", "keyword_search", "filter_memories"}) {
    auto v = GetBool(body, name);
    if (!v.ok()) return v.status();
  }
  ENGRAM_RETURN_IF_ERROR(RefuseIfTrue(body, "show_expired", "searching expired memories"));
  ENGRAM_RETURN_IF_ERROR(RefuseIfTrue(body, "enable_graph", "graph memory"));
  if (auto f = body.find("fields"); f != body.end() && !f->is_null()) {
    if (!f->is_array()) {
      return Status::InvalidParameter(
          fmt::format("fields must be an array of strings, got {}", JsonTypeName(*f)));
    }
    static constexpr std::string_view kKnown[] = {
        "id",       "memory",     "user_id",    "agent_id",        "app_id",    "run_id",
        "metadata", "categories", "created_at", "updated_at",      "score",     "expiration_date",
        "hash",     "immutable",  "owner",      "organization_id", "project_id"};
    for (size_t i = 0; i < f->size(); ++i) {
      const json& name = (*f)[i];
      if (!name.is_string() || std::find(std::begin(kKnown), std::end(kKnown),
                                         name.get<std::string>()) == std::end(kKnown)) {
        return Status::InvalidParameter(
            fmt::format("fields[{}] must name a memory field ({})", i, fmt::join(kKnown, ", ")));
      }
      out.fields.push_back(name.get<std::string>());
    }
  }
  out.results_object = v3;
  if (auto of = body.find("output_format"); of != body.end() && !of->is_null()) {
    if (!of->is_string() || (*of != "v1.0" && *of != "v1.1")) {
      return Status::InvalidParameter("output_format must be \"v1.0\" or \"v1.1\"");
    }
    out.results_object = v3 || *of == "v1.1";
  }
  return out;
}

Result<MemoryFilter> ParseMem0ListBody(const json& body, const MemoryApiLimits& limits) {
  json parts = json::array();
  ENGRAM_RETURN_IF_ERROR(CollectFilterParts(body, limits, &parts));
  ENGRAM_RETURN_IF_ERROR(RefuseIfTrue(body, "show_expired", "listing expired memories"));
  for (auto [name, op] :
       {std::pair<const char*, const char*>{"start_date", "gte"}, {"end_date", "lte"}}) {
    auto v = GetString(body, name, name, {.required = false, .max_bytes = 64});
    if (!v.ok()) return v.status();
    if (!*v) continue;
    const std::optional<int64_t> at = ParseIsoToMicros(**v);
    if (!at) {
      return Status::InvalidParameter(
          fmt::format("{} must be an ISO 8601 date or date-time, e.g. 2024-05-01", name));
    }
    // A date alone names its whole day (UTC): an end_date of 2024-05-01 keeps what was made
    // that day, up to its last microsecond (which 9999-12-31 has too, unlike a next day).
    if (op == std::string_view("lte") && v->value().size() == kIsoDateLength) {
      parts.push_back(
          json{{"created_at", json{{"lte", FormatIsoMicros(*at + kMicrosPerDay - 1)}}}});
      continue;
    }
    parts.push_back(json{{"created_at", json{{op, **v}}}});
  }
  auto filter = ParseConjunction(std::move(parts), limits);
  if (!filter.ok()) return filter.status();
  if (!filter->ScopeKeys()) return Status::InvalidParameter(kNoEntity);
  return filter;
}

Result<MemoryFilter> Mem0EntityFilterFromQuery(const std::map<std::string, std::string>& params,
                                               const MemoryApiLimits& limits) {
  json parts = json::array();
  for (const char* field : kEntityFields) {
    auto it = params.find(field);
    if (it == params.end() || it->second.empty()) continue;
    ENGRAM_RETURN_IF_ERROR(CheckIdValue(it->second, field, limits.max_id_bytes));
    parts.push_back(Equals(field, it->second));
  }
  if (parts.empty()) {
    return Status::InvalidParameter(
        "at least one of the query parameters user_id, agent_id, app_id, run_id is required");
  }
  return ParseConjunction(std::move(parts), limits);
}

Result<MemoryUpdateRequest> ParseMem0Update(const json& body, const std::string& workspace,
                                            const std::string& id, const MemoryApiLimits& limits) {
  MemoryUpdateRequest req;
  req.workspace = workspace;
  req.id = id;
  auto text =
      GetString(body, "text", "text", {.required = false, .max_bytes = limits.max_memory_bytes});
  if (!text.ok()) return text.status();
  if (*text && !IsValidUtf8(**text)) return Status::InvalidParameter("text must be valid UTF-8");
  req.text = *text;
  if (auto m = body.find("metadata"); m != body.end() && !m->is_null()) {
    auto metadata = ReadMetadataField(body, limits.max_metadata_bytes);
    if (!metadata.ok()) return metadata.status();
    req.metadata_patch_json = std::move(*metadata);
  }
  auto ts = ReadTimestampField(body);
  if (!ts.ok()) return ts.status();
  req.timestamp_us = *ts;
  auto expires = ReadExpirationField(body);
  if (!expires.ok()) return expires.status();
  req.expires_at_us = *expires;
  if (!req.text && !req.metadata_patch_json && !req.timestamp_us && !req.expires_at_us) {
    return Status::InvalidParameter(
        "at least one of text, metadata, timestamp, expiration_date is required");
  }
  return req;
}

Result<std::vector<Mem0BatchItem>> ParseMem0Batch(const json& body, bool with_text,
                                                  size_t max_items, const MemoryApiLimits& limits) {
  auto it = body.find("memories");
  if (it == body.end() || !it->is_array()) {
    return Status::InvalidParameter("memories must be an array of {\"memory_id\": ...} objects");
  }
  if (it->empty() || it->size() > max_items) {
    return Status::InvalidParameter(
        fmt::format("memories must list 1 to {} memories, got {}", max_items, it->size()));
  }
  std::vector<Mem0BatchItem> items;
  std::set<std::string> seen;
  for (size_t i = 0; i < it->size(); ++i) {
    const json& entry = (*it)[i];
    const std::string path = fmt::format("memories[{}]", i);
    if (!entry.is_object()) {
      return Status::InvalidParameter(fmt::format("{} must be an object", path));
    }
    auto id =
        GetString(entry, "memory_id", path + ".memory_id", {.max_bytes = limits.max_id_bytes});
    if (!id.ok()) return id.status();
    Mem0BatchItem item{**id, std::nullopt};
    if (!seen.insert(item.memory_id).second) {
      return Status::InvalidParameter(
          fmt::format("{}.memory_id {} is listed twice", path, item.memory_id));
    }
    if (with_text) {
      auto text = GetString(entry, "text", path + ".text", {.max_bytes = limits.max_memory_bytes});
      if (!text.ok()) return text.status();
      if (!IsValidUtf8(**text)) {
        return Status::InvalidParameter(fmt::format("{}.text must be valid UTF-8", path));
      }
      item.text = **text;
    }
    items.push_back(std::move(item));
  }
  return items;
}

Result<Mem0Feedback> ParseMem0Feedback(const json& body, const MemoryApiLimits& limits) {
  Mem0Feedback out;
  auto id = GetString(body, "memory_id", "memory_id", {.max_bytes = limits.max_id_bytes});
  if (!id.ok()) return id.status();
  out.memory_id = **id;
  auto feedback = GetString(body, "feedback", "feedback", {.required = false, .allow_empty = true});
  if (!feedback.ok()) return feedback.status();
  if (*feedback) {
    out.feedback = **feedback;
    if (out.feedback != "POSITIVE" && out.feedback != "NEGATIVE" &&
        out.feedback != "VERY_NEGATIVE" && !out.feedback.empty()) {
      return Status::InvalidParameter("feedback must be POSITIVE, NEGATIVE, VERY_NEGATIVE or null");
    }
  }
  auto reason =
      GetString(body, "feedback_reason", "feedback_reason",
                {.required = false, .allow_empty = true, .max_bytes = kMaxFeedbackReasonBytes});
  if (!reason.ok()) return reason.status();
  if (*reason) {
    if (!IsValidUtf8(**reason)) {
      return Status::InvalidParameter("feedback_reason must be valid UTF-8");
    }
    out.reason = **reason;
  }
  return out;
}

Result<std::string> Mem0EntityField(std::string_view type) {
  if (type == "user" || type == "users") return std::string("user_id");
  if (type == "agent" || type == "agents") return std::string("agent_id");
  if (type == "app" || type == "apps") return std::string("app_id");
  if (type == "run" || type == "runs") return std::string("run_id");
  return Status::InvalidParameter(
      fmt::format("entity type {} is not one of user, agent, app, run", type.substr(0, 32)));
}

}  // namespace engram
