#include "api/leaderboard_api.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>

#include "api/envelope.h"
#include "api/json_input.h"
#include "api/search_explanation_json.h"
#include "common/ascii.h"
#include "common/codec.h"
#include "common/time_util.h"
#include "extract/rule_based_extractor.h"

namespace engram {

namespace {

// Unix milliseconds accepted for message timestamps: years 1970 to 9999.
constexpr int64_t kMaxTimestampMs = 253402300799999LL;

// "user" / "assistant" for any casing and surrounding white space; nullopt for other roles.
std::optional<std::string> NormalizedRole(std::string_view role) {
  std::string r(TrimAsciiSpace(role));
  for (char& c : r) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  if (r == "user" || r == "assistant") return r;
  return std::nullopt;
}

// messages[i].timestamp: optional Unix milliseconds. A fraction (clients that compute
// milliseconds from float seconds send 1704067200000.0 or ...123.5) is cut off.
Result<std::optional<int64_t>> ParseTimestamp(const nlohmann::json& m, const std::string& path) {
  auto it = m.find("timestamp");
  if (it != m.end() && it->is_number_float()) {
    const double d = it->get<double>();
    if (!(d >= 0 && d <= static_cast<double>(kMaxTimestampMs))) {
      return Status::InvalidParameter(
          fmt::format("{} must be between 0 and {}, got {}", path, kMaxTimestampMs, d));
    }
    return std::optional<int64_t>(static_cast<int64_t>(std::floor(d)));
  }
  return GetInt(m, "timestamp", path, 0, kMaxTimestampMs, false);
}

Result<LeaderboardMessage> ParseMessage(const nlohmann::json& m, const std::string& path,
                                        const LeaderboardApiLimits& limits,
                                        ImageCollector* images) {
  if (!m.is_object()) return Status::InvalidParameter(path + " must be an object");
  LeaderboardMessage msg;
  auto role = GetString(m, "role", path + ".role", {.max_bytes = 32});
  if (!role.ok()) return role.status();
  // "User", "ASSISTANT", " user ": the same roles in another spelling.
  auto normalized = NormalizedRole(**role);
  if (!normalized) {
    return Status::InvalidParameter(
        fmt::format("{}.role must be one of user, assistant; got \"{}\"", path, **role));
  }
  msg.role = *normalized;
  auto ts = ParseTimestamp(m, path + ".timestamp");
  if (!ts.ok()) return ts.status();
  msg.timestamp_ms = *ts;

  auto it = m.find("content");
  if (it == m.end() || it->is_null())
    return Status::InvalidParameter(path + ".content is required");
  if (it->is_string()) {
    // Empty and blank strings are accepted: real benchmark data has them (they index nothing).
    auto text = GetString(m, "content", path + ".content",
                          {.allow_empty = true, .max_bytes = limits.content.max_text_bytes});
    if (!text.ok()) return text.status();
    msg.parts.push_back(ContentPart{.text = **text});
  } else if (it->is_array()) {
    auto parts = ParseContentParts(*it, path + ".content", limits.content, images,
                                   /*allow_blank=*/true);
    if (!parts.ok()) return parts.status();
    msg.content_is_parts = true;
    msg.parts = std::move(*parts);
  } else {
    return Status::InvalidParameter(path + ".content must be a string or a ContentPart array");
  }
  return msg;
}

}  // namespace

Result<LeaderboardAddRequest> ParseLeaderboardAdd(std::string_view body,
                                                  const LeaderboardApiLimits& limits) {
  auto parsed = ParseJsonObject(body);
  if (!parsed.ok()) return parsed.status();
  const nlohmann::json& j = *parsed;
  LeaderboardAddRequest req;
  auto request_id =
      GetString(j, "request_id", "request_id", {.max_bytes = limits.max_request_id_bytes});
  if (!request_id.ok()) return request_id.status();
  auto user_id = GetString(j, "user_id", "user_id", {.max_bytes = limits.max_id_bytes});
  if (!user_id.ok()) return user_id.status();
  auto session_id = GetString(j, "session_id", "session_id", {.max_bytes = limits.max_id_bytes});
  if (!session_id.ok()) return session_id.status();
  req.request_id = **request_id;
  req.user_id = **user_id;
  req.session_id = **session_id;
  for (const std::string* s : {&req.request_id, &req.user_id, &req.session_id}) {
    if (!IsValidUtf8(*s)) return Status::InvalidParameter("identifiers must be valid UTF-8");
  }

  auto it = j.find("messages");
  if (it == j.end() || it->is_null()) return Status::InvalidParameter("messages is required");
  if (!it->is_array()) return Status::InvalidParameter("messages must be an array");
  if (it->empty()) return Status::InvalidParameter("messages must not be empty");
  if (it->size() > limits.max_messages) {
    return Status::InvalidParameter(
        fmt::format("messages has {} items, at most {} allowed", it->size(), limits.max_messages));
  }
  ImageCollector images;
  for (size_t i = 0; i < it->size(); ++i) {
    auto msg = ParseMessage((*it)[i], fmt::format("messages[{}]", i), limits, &images);
    if (!msg.ok()) return msg.status();
    req.messages.push_back(std::move(*msg));
  }
  for (auto& [hash, blob] : images.by_hash) req.images.push_back(std::move(blob));

  // The canonical form (sorted keys, no whitespace) makes retries with reordered keys match.
  req.body_hash = Sha256Hex(DumpJson(j));
  req.response_json = DumpJson(nlohmann::json{{"success", true},
                                              {"request_id", req.request_id},
                                              {"user_id", req.user_id},
                                              {"session_id", req.session_id}});
  return req;
}

Result<LeaderboardSearchRequest> ParseLeaderboardSearch(std::string_view body,
                                                        const LeaderboardApiLimits& limits) {
  auto parsed = ParseJsonObject(body);
  if (!parsed.ok()) return parsed.status();
  const nlohmann::json& j = *parsed;
  LeaderboardSearchRequest req;
  auto q = j.find("query");
  if (q == j.end() || q->is_null()) return Status::InvalidParameter("query is required");
  if (q->is_string()) {
    auto text = GetString(j, "query", "query", {.max_bytes = limits.max_query_bytes});
    if (!text.ok()) return text.status();
    req.query = **text;
  } else if (q->is_array()) {
    // Multimodal queries: the text parts are searched; images are accepted and checked.
    ImageCollector images;
    auto parts = ParseContentParts(*q, "query", limits.content, &images);
    if (!parts.ok()) return parts.status();
    for (const auto& p : *parts) {
      if (p.is_image || IsBlank(p.text)) continue;
      if (!req.query.empty()) req.query.push_back('\n');
      req.query += p.text;
    }
    if (req.query.size() > limits.max_query_bytes) {
      return Status::InvalidParameter(
          fmt::format("query is too long: at most {} bytes of text", limits.max_query_bytes));
    }
  } else {
    return Status::InvalidParameter("query must be a string or a ContentPart array");
  }
  auto user_id = GetString(j, "user_id", "user_id", {.max_bytes = limits.max_id_bytes});
  if (!user_id.ok()) return user_id.status();
  req.user_id = **user_id;
  auto top_k = GetInt(j, "top_k", "top_k", 1, limits.max_top_k, false);
  if (!top_k.ok()) {
    // A number outside 1..max_top_k is a well-formed body with a value out of range: 422, as
    // the Leaderboard's clients expect. A value of another type stays 400.
    if (j.at("top_k").is_number_integer()) return Status::OutOfRange(top_k.status().message());
    return top_k.status();
  }
  req.top_k = static_cast<int>(top_k->value_or(10));
  auto explain = GetBool(j, "explain");
  if (!explain.ok()) return explain.status();
  req.explain = explain->value_or(false);
  auto reference = GetTime(j, "reference_date");
  if (!reference.ok()) return reference.status();
  req.reference_us = *reference;

  auto o = j.find("options");
  if (o != j.end() && !o->is_null()) {
    if (!o->is_array()) return Status::InvalidParameter("options must be an array of strings");
    if (o->size() > limits.max_options) {
      return Status::InvalidParameter(
          fmt::format("options has {} items, at most {} allowed", o->size(), limits.max_options));
    }
    for (size_t i = 0; i < o->size(); ++i) {
      const auto& v = (*o)[i];
      if (!v.is_string()) {
        return Status::InvalidParameter(fmt::format("options[{}] must be a string", i));
      }
      if (v.get_ref<const std::string&>().size() > limits.max_option_bytes) {
        return Status::InvalidParameter(
            fmt::format("options[{}] is too long: at most {} bytes", i, limits.max_option_bytes));
      }
      req.options.push_back(v.get<std::string>());
    }
  }
  return req;
}

std::string DatedText(int64_t time_us, const std::string& text) {
  return "[" + FormatHumanMinute(time_us) + "] " + text;
}

std::string ExcerptHeader(const LeaderboardExcerpt& excerpt) {
  std::string header =
      fmt::format("lines {}-{} of {} of a {} KB {} message", excerpt.first_line, excerpt.last_line,
                  excerpt.lines, std::max<uint32_t>(1, (excerpt.bytes + 512) / 1024), excerpt.role);
  if (excerpt.first_line > 1 && !excerpt.title.empty()) {
    header += " that begins \"" + excerpt.title + "\"";
  }
  return header + ":\n";
}

namespace {

// The line a turn of an excerpt begins with: its date when it differs from the previous turn's
// (`minute` carries it along), and its role unless the text names its speaker.
std::string TurnHeader(const LeaderboardTurn& turn, std::string& minute) {
  std::string header;
  if (std::string m = FormatHumanMinute(turn.time_us); m != minute) {
    header = "[" + m + "] ";
    minute = std::move(m);
  }
  const bool labelled =
      turn.parts.empty()
          ? rule_extract::NamesItsSpeaker(turn.text)
          : !turn.parts.front().is_image && rule_extract::NamesItsSpeaker(turn.parts.front().text);
  if (!labelled) header += turn.role + ": ";
  return header;
}

}  // namespace

std::string TurnsText(const std::vector<LeaderboardTurn>& turns) {
  std::string text;
  std::string minute;
  for (const LeaderboardTurn& t : turns) {
    if (!text.empty()) text += '\n';
    text += TurnHeader(t, minute);
    text += t.text;
  }
  return text;
}

namespace {

// A stored ContentPart as the API answers it (images inline as data: URLs).
void AppendPart(const ContentPart& p, const LeaderboardSearchResult& result,
                nlohmann::json& parts) {
  if (!p.is_image) {
    parts.push_back({{"type", "text"}, {"text", p.text}});
    return;
  }
  auto img = result.images.find(p.image_sha256);
  if (img == result.images.end()) return;  // cannot happen unless the store lost it
  parts.push_back(
      {{"type", "image_url"},
       {"image_url",
        {{"url", "data:" + img->second.mime + ";base64," + Base64Encode(img->second.bytes)}}}});
}

nlohmann::json RenderContent(const LeaderboardHit& hit, const LeaderboardSearchResult& result) {
  if (hit.turns.empty()) {
    if (hit.parts.empty()) {
      return DatedText(hit.time_us,
                       hit.excerpt ? ExcerptHeader(*hit.excerpt) + hit.text : hit.text);
    }
    nlohmann::json parts = nlohmann::json::array();
    parts.push_back({{"type", "text"}, {"text", "[" + FormatHumanMinute(hit.time_us) + "]"}});
    for (const auto& p : hit.parts) AppendPart(p, result, parts);
    return parts;
  }
  const bool multimodal = std::any_of(hit.turns.begin(), hit.turns.end(),
                                      [](const LeaderboardTurn& t) { return !t.parts.empty(); });
  if (!multimodal) return TurnsText(hit.turns);
  // A turn sent as a ContentPart array keeps its parts (images included); each turn begins with
  // a text part carrying its header (and its text, when it was sent as text).
  nlohmann::json parts = nlohmann::json::array();
  std::string minute;
  for (const LeaderboardTurn& t : hit.turns) {
    std::string header = TurnHeader(t, minute);
    if (t.parts.empty()) {
      parts.push_back({{"type", "text"}, {"text", header + t.text}});
      continue;
    }
    if (!header.empty()) parts.push_back({{"type", "text"}, {"text", header}});
    for (const auto& p : t.parts) AppendPart(p, result, parts);
  }
  return parts;
}

nlohmann::json RenderHit(const LeaderboardHit& hit, const LeaderboardSearchResult& result) {
  nlohmann::json item;
  item["id"] = hit.id;
  item["content"] = RenderContent(hit, result);
  item["score"] = hit.score;
  if (hit.explain) item["explain"] = ExplanationJson(*hit.explain);
  // Milliseconds, as JavaScript's toISOString writes them (what the Leaderboard's clients parse).
  item["created_at"] = FormatIsoMillis(hit.time_us);
  return item;
}

// The Leaderboard's routes other than search.
class LeaderboardHandlers {
 public:
  LeaderboardHandlers(LeaderboardService* service, LeaderboardApiLimits limits, std::string version)
      : service_(service), limits_(std::move(limits)), version_(std::move(version)) {}

  // The platform probes {base}/health without credentials before a run. Some clients compare the
  // whole body with {"status":"ok"}, so the version travels in a header.
  Result<HttpResponse> Health(const HttpRequest&, RequestContext&) const {
    Status st = service_->CheckWritable();
    HttpResponse r = JsonResponse(st.ok() ? 200 : 503,
                                  nlohmann::json{{"status", st.ok() ? "ok" : "unavailable"}});
    r.headers.emplace_back("X-Engram-Version", version_);
    return r;
  }

  Result<HttpResponse> DeleteUser(const HttpRequest&, RequestContext& ctx) const {
    const std::string& user_id = ctx.params.at("user_id");
    if (user_id.empty()) return Status::InvalidParameter("user_id is required");
    if (user_id.size() > limits_.max_id_bytes) {
      return Status::InvalidParameter(
          fmt::format("user_id is too long: at most {} bytes", limits_.max_id_bytes));
    }
    if (!IsValidUtf8(user_id)) return Status::InvalidParameter("user_id must be valid UTF-8");
    auto deleted = service_->DeleteUser(user_id);
    if (!deleted.ok()) return deleted.status();
    return JsonResponse(200, nlohmann::json{{"success", true},
                                            {"user_id", user_id},
                                            {"deleted",
                                             {{"messages", deleted->messages},
                                              {"images", deleted->images},
                                              {"vectors", deleted->vectors},
                                              {"idempotency_records", deleted->idempotency}}}});
  }

  Result<HttpResponse> Add(const HttpRequest& req, RequestContext&) const {
    auto parsed = ParseLeaderboardAdd(req.body, limits_);
    if (!parsed.ok()) return parsed.status();
    auto answer = service_->Add(*parsed);
    if (!answer.ok()) return answer.status();
    HttpResponse r;
    r.body = std::move(*answer);
    return r;
  }

 private:
  LeaderboardService* service_;
  LeaderboardApiLimits limits_;
  std::string version_;
};

// Search: parsed first, so that a cold scope (loaded from the store first) moves to a worker.
RouteHandler SearchHandler(LeaderboardService* service, const LeaderboardApiLimits& limits) {
  return ParsedHandler<LeaderboardSearchRequest>(
      {.parse = [limits](const HttpRequest& req,
                         RequestContext&) { return ParseLeaderboardSearch(req.body, limits); },
       .ready =
           [service](const LeaderboardSearchRequest& search) {
             return service->ScopeLoaded(search.user_id);
           },
       .run = [service](LeaderboardSearchRequest&& search, const HttpRequest&,
                        RequestContext&) -> Result<HttpResponse> {
         auto result = service->Search(search);
         if (!result.ok()) return result.status();
         nlohmann::json data = nlohmann::json::array();
         for (const auto& hit : result->hits) data.push_back(RenderHit(hit, *result));
         return JsonResponse(200, nlohmann::json{{"data", std::move(data)}});
       }});
}

}  // namespace

void RegisterLeaderboardRoutes(Router& router, LeaderboardService* service,
                               LeaderboardApiLimits limits, LeaderboardServerInfo info) {
  const std::string ws = service->options().workspace;
  auto h = std::make_shared<const LeaderboardHandlers>(service, limits, info.version);
  using H = LeaderboardHandlers;
  // HEAD /leaderboard/health is answered as GET by the App.
  router.Add({.method = "GET",
              .pattern = "/leaderboard/health",
              .name = "leaderboard_health",
              .auth = AuthMode::kNone,
              .handler = BindHandler(h, &H::Health)});
  router.Add({.method = "DELETE",
              .pattern = "/leaderboard/users/{user_id}",
              .name = "leaderboard_delete_user",
              .fixed_workspace = ws,
              .handler = BindHandler(h, &H::DeleteUser)});
  router.Add({.method = "POST",
              .pattern = "/leaderboard/add",
              .name = "leaderboard_add",
              .fixed_workspace = ws,
              .handler = BindHandler(h, &H::Add)});
  router.Add({.method = "POST",
              .pattern = "/leaderboard/search",
              .name = "leaderboard_search",
              .fixed_workspace = ws,
              .handler = SearchHandler(service, limits),
              .compute_bound = true});
}

}  // namespace engram
