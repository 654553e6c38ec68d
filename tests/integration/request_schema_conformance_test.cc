// The documented request schemas (src/api/openapi.json) against the parsers, on a real server:
// every operation that takes a JSON object documents an example, the server accepts that example
// (2xx), and it refuses, with a 4xx whose answer names the field, each body derived from the
// example that breaks one rule of the schema: a required field left out, a field of another type,
// a string longer than its maxLength or shorter than its minLength, a value outside an enum, a
// number outside its minimum / maximum, an integer with a fraction, an array with fewer items
// than its minItems. Nested objects and the first item of arrays of objects are broken the same
// way. An optional field the schema lets be null is sent as null and must be accepted. So a field
// a parser ignores, takes leniently or checks otherwise than documented shows up here, and a new
// route's schema is checked the day it is written. Every answer, success or refusal, must be one
// the operation documents for its status, and match that response's schema; so must the answer
// of every GET whose path the test can fill, which also refuses each query parameter sent outside
// its documented bounds or enum, naming it.
#include <cctype>
#include <fstream>
#include <iostream>
#include <map>
#include <optional>
#include <set>

#include "memory_client.h"
#include "openapi_lookup.h"
#include "test_util.h"

namespace engram::testing {
namespace {

using nlohmann::json;

// `schema` with a local "$ref" followed (OpenAPI documents refer within themselves), and an
// allOf of one schema (how a $ref gets a description of its own) read as that schema.
const json& Resolve(const json& doc, const json& schema) {
  if (!schema.is_object()) return schema;
  if (schema.contains("$ref")) {
    const std::string ref = schema["$ref"];
    return Resolve(doc, doc.at(json::json_pointer(ref.substr(1))));
  }
  if (schema.contains("allOf") && schema["allOf"].size() == 1) {
    return Resolve(doc, schema["allOf"][0]);
  }
  return schema;
}

// The JSON types a value of `schema` may take ("integer" counts as "number"'s subset).
std::set<std::string> AllowedTypes(const json& doc, const json& schema) {
  std::set<std::string> out;
  const json& s = Resolve(doc, schema);
  if (s.contains("type")) {
    if (s["type"].is_array()) {
      for (const json& t : s["type"]) out.insert(t.get<std::string>());
    } else {
      out.insert(s["type"].get<std::string>());
    }
  }
  for (const char* any : {"oneOf", "anyOf"}) {
    if (!s.contains(any)) continue;
    for (const json& alt : s[any]) {
      const std::set<std::string> more = AllowedTypes(doc, alt);
      if (more.empty()) return {};  // an alternative of any type: every value may fit
      out.insert(more.begin(), more.end());
    }
  }
  return out;
}

// Values of types the schema does not allow (none when it allows any).
std::vector<std::pair<std::string, json>> WrongValues(const std::set<std::string>& allowed) {
  std::vector<std::pair<std::string, json>> out;
  if (allowed.empty()) return out;
  const bool number = allowed.contains("number");
  const std::pair<std::string, json> candidates[] = {
      {"a string", "not-the-right-type"}, {"a number", 7},         {"a boolean", true},
      {"an object", json{{"k", "v"}}},    {"an array", json{"x"}}, {"null", nullptr}};
  const char* types[] = {"string", "integer", "boolean", "object", "array", "null"};
  for (size_t i = 0; i < std::size(candidates); ++i) {
    const std::string type = types[i];
    if (allowed.contains(type) || (type == "integer" && number)) continue;
    out.push_back(candidates[i]);
  }
  return out;
}

// The one type a schema gives its non-null values ("string" of ["string", "null"]); "" when it
// names none or several.
std::string ValueType(const json& schema) {
  const json type = schema.value("type", json());
  if (type.is_string()) return type.get<std::string>();
  std::string only;
  if (type.is_array()) {
    for (const json& t : type) {
      if (t == "null") continue;
      if (!only.empty()) return "";
      only = t.get<std::string>();
    }
  }
  return only;
}

// Whether an error answer names `field`: its message (the envelope's message, or mem0's detail)
// holds the name as a word of its own ("doc.title", "title must …"), not inside another.
bool NamesField(const HttpResponse& r, const std::string& field) {
  const json body = r.Json();
  std::string message;
  if (body.is_object()) {
    for (const char* key : {"message", "detail"}) {
      if (body.contains(key) && body[key].is_string()) message += body[key].get<std::string>();
    }
  }
  auto word = [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; };
  for (size_t at = message.find(field); at != std::string::npos; at = message.find(field, at + 1)) {
    const size_t end = at + field.size();
    if ((at == 0 || !word(message[at - 1])) && (end == message.size() || !word(message[end]))) {
      return true;
    }
  }
  return false;
}

// A body derived from an example: one that breaks a rule of the schema (refused, with an answer
// naming `field`), or one the schema allows beside the example (accepted).
struct Variant {
  std::string what;  // for failure messages
  std::string field;
  json body;
  bool refused = true;
};

// Bodies that break one rule of `schema` each, derived from `body` by changing what `at` points
// to (an object the example holds); and, where the object names no alternative sets of fields
// (anyOf), each optional field the schema lets be null sent as null, which must read as absent.
void Vary(const json& doc, const json& schema_in, const json& body, const json::json_pointer& at,
          std::vector<Variant>* out) {
  const json& schema = Resolve(doc, schema_in);
  if (!schema.contains("properties")) return;
  const json& example = body.at(at);
  const json required = schema.value("required", json::array());
  auto with = [&](const std::string& field, const std::string& what, const json& value) {
    json b = body;
    b[at / field] = value;
    out->push_back({at.to_string() + "/" + field + " " + what, field, std::move(b)});
  };
  const bool alternatives = schema.contains("anyOf") || schema.contains("oneOf");
  for (const auto& [field, prop_in] : schema["properties"].items()) {
    const json& prop = Resolve(doc, prop_in);
    const bool present = example.contains(field);
    const bool is_required = std::find(required.begin(), required.end(), field) != required.end();
    if (present && is_required) {
      json b = body;
      b.at(at).erase(field);
      out->push_back({at.to_string() + "/" + field + " left out", field, std::move(b)});
    }
    const std::set<std::string> allowed = AllowedTypes(doc, prop);
    if (!is_required && !alternatives && allowed.contains("null")) {
      json b = body;
      b[at / field] = nullptr;
      out->push_back({at.to_string() + "/" + field + " as null", field, std::move(b), false});
    }
    for (const auto& [kind, value] : WrongValues(allowed)) {
      with(field, "as " + kind, value);
    }
    const std::string type = ValueType(prop);
    if (type == "string") {
      if (prop.contains("maxLength")) {
        with(field, "over its maxLength", std::string(prop["maxLength"].get<size_t>() + 1, 'a'));
      }
      if (prop.value("minLength", 0) > 0) with(field, "under its minLength", "");
      if (prop.contains("enum")) with(field, "outside its enum", "zz-not-listed");
    }
    if (type == "integer" || type == "number") {
      if (prop.contains("minimum"))
        with(field, "under its minimum", prop["minimum"].get<double>() - 1);
      if (prop.contains("maximum"))
        with(field, "over its maximum", prop["maximum"].get<double>() + 1);
      if (type == "integer") with(field, "with a fraction", 2.5);
    }
    if (type == "array" && prop.value("minItems", 0) > 0)
      with(field, "with too few items", json::array());
    if (!present) continue;
    if (type == "object" && example[field].is_object()) {
      Vary(doc, prop, body, at / field, out);
    }
    if (type == "array" && prop.contains("items") && !example[field].empty() &&
        example[field][0].is_object()) {
      Vary(doc, prop["items"], body, at / field / 0, out);
    }
  }
}

// `value` with every string "{name}" whose name `params` holds replaced by its value (the
// examples name the ids of resources the test makes, as the paths do).
json Substitute(const json& value, const std::map<std::string, std::string>& params) {
  if (value.is_string()) {
    const std::string& s = value.get_ref<const std::string&>();
    if (s.size() > 2 && s.front() == '{' && s.back() == '}') {
      auto it = params.find(s.substr(1, s.size() - 2));
      if (it != params.end()) return it->second;
    }
    return value;
  }
  json out = value;
  for (auto it = out.begin(); it != out.end(); ++it) {
    if (it->is_structured() || it->is_string()) *it = Substitute(*it, params);
  }
  return out;
}

// Whether `r` is an answer `op` documents (openapi_lookup.h).
void ExpectDocumentedAnswer(const json& doc, const json& op, const std::string& where,
                            const HttpResponse& r) {
  const Status documented =
      CheckDocumentedAnswer(doc, op, r.status, r.Header("content-type"), r.body);
  EXPECT_TRUE(documented.ok()) << where << ": answered " << r.status
                               << " unlike its document: " << documented.message() << ": "
                               << r.Describe();
}

// `pattern` with each "{name}" replaced by params[name]; nullopt when one has no value.
std::optional<std::string> FillPath(const std::string& pattern,
                                    const std::map<std::string, std::string>& params) {
  std::string path;
  for (size_t i = 0; i < pattern.size();) {
    if (pattern[i] != '{') {
      path += pattern[i++];
      continue;
    }
    const size_t end = pattern.find('}', i);
    if (end == std::string::npos) return std::nullopt;
    auto value = params.find(pattern.substr(i + 1, end - i - 1));
    if (value == params.end() || value->second.empty()) return std::nullopt;
    path += value->second;
    i = end + 1;
  }
  return path;
}

// `target` with query parameter `name` set to `value` (replaced when it is already sent).
std::string WithQueryParameter(std::string target, const std::string& name,
                               const std::string& value) {
  const size_t query = target.find('?');
  if (query != std::string::npos) {
    for (size_t at = query; at != std::string::npos; at = target.find('&', at + 1)) {
      if (target.compare(at + 1, name.size() + 1, name + "=") != 0) continue;
      const size_t begin = at + 1 + name.size() + 1;
      const size_t end = target.find('&', begin);
      return target.replace(begin, (end == std::string::npos ? target.size() : end) - begin, value);
    }
  }
  return target + (query == std::string::npos ? "?" : "&") + name + "=" + value;
}

class RequestSchemaConformanceTest : public SharedServerTest {
 protected:
  // A new memory of the examples' user (an operation may delete the one before).
  std::string NewMemory() {
    json event =
        AddMemoriesAndWait(client(), {{"messages", "Alice lives in Boston " + UniqueWord()},
                                      {"user_id", "alice"},
                                      {"infer", false}});
    EXPECT_EQ(event.value("status", ""), "SUCCEEDED") << event.dump();
    last_event_id_ = event.value("id", "");
    return event["results"].empty() ? "" : event["results"][0].get<std::string>();
  }

  std::string last_event_id_;  // of the last NewMemory
};

TEST_F(RequestSchemaConformanceTest, ParsersAcceptTheExamplesAndRefuseWhatTheSchemasForbid) {
  ENGRAM_REQUIRE_BINARY();
  const json doc = LoadOpenApiDocument();
  ASSERT_FALSE(doc.is_discarded()) << "src/api/openapi.json is not JSON";

  // What the paths and examples name: resources the examples act on, owned by their user.
  const std::string v3 = "/v3/openapi/workspaces/{workspace_name}/memory/{service_id}";
  const json import_example = doc.at("paths")
                                  .at(v3 + "/skills/import")
                                  .at("post")
                                  .at("requestBody")
                                  .at("content")
                                  .at("application/json")
                                  .at("example");
  HttpResponse imported = client().Post(
      "/v3/openapi/workspaces/default/memory/agentic-memory/skills/import", import_example);
  ASSERT_EQ(imported.status, 200) << imported.Describe();
  std::map<std::string, std::string> params = {
      {"workspace_name", "default"},
      {"service_id", "agentic-memory"},
      {"memory_id", ""},
      {"skill_id", imported.Json()["result"]["data"][0]["id"].get<std::string>()},
      {"kb_id", "handbook"}};

  size_t operations = 0;
  size_t refusals = 0;
  size_t accepted = 0;
  for (const auto& [pattern, ops] : doc.at("paths").items()) {
    for (const auto& [method, op] : ops.items()) {
      const json* media = nullptr;
      if (op.contains("requestBody") && op.at("requestBody").contains("content")) {
        const json& content = op.at("requestBody").at("content");
        if (content.contains("application/json")) media = &content.at("application/json");
      }
      if (media == nullptr || !media->contains("schema")) continue;
      const json& schema = Resolve(doc, media->at("schema"));
      // A body of any shape (MCP's JSON-RPC messages, checked by their own suites).
      if (schema.value("type", "") != "object") continue;
      const std::string where = method + " " + pattern;
      params["memory_id"] = NewMemory();
      ASSERT_TRUE(schema.contains("properties")) << where << ": documents no fields";
      ASSERT_TRUE(media->contains("example")) << where << ": documents no example";
      const std::optional<std::string> filled = FillPath(pattern, params);
      ASSERT_TRUE(filled) << where << ": a path parameter has no value";
      const std::string& path = *filled;
      std::string upper = method;
      for (char& c : upper) c = static_cast<char>(std::toupper(c));
      const json& documented = (*media)["example"];
      const json example = Substitute(documented, params);
      HttpResponse ok = client().Request(upper, path, example.dump(), {});
      EXPECT_TRUE(ok.status >= 200 && ok.status < 300)
          << where << ": the documented example is refused: " << ok.Describe();
      ExpectDocumentedAnswer(doc, op, where, ok);
      ++operations;

      std::vector<Variant> variants;
      variants.push_back({"not an object", "", json::array({example})});
      Vary(doc, schema, documented, json::json_pointer(), &variants);
      // A body that names a memory and must succeed gets a memory of its own (the example may
      // have deleted the one before).
      const bool names_memory = documented.dump().find("\"{memory_id}\"") != std::string::npos;
      for (Variant& v : variants) {
        if (!v.refused && names_memory) params["memory_id"] = NewMemory();
        v.body = Substitute(v.body, params);
        // An idempotency key names one body: each body sent has its own.
        if (example.contains("request_id") && v.body.is_object() &&
            v.body.value("request_id", json()) == example["request_id"]) {
          v.body["request_id"] = UniqueId("schema");
        }
        HttpResponse r = client().Request(upper, path, v.body.dump(), {});
        ExpectDocumentedAnswer(doc, op, where + ": " + v.what, r);
        if (!v.refused) {
          EXPECT_TRUE(r.status >= 200 && r.status < 300)
              << where << ": " << v.what << " is allowed but refused: " << r.Describe();
          ++accepted;
          continue;
        }
        EXPECT_TRUE(r.status >= 400 && r.status < 500 && r.status != 404 && r.status != 405)
            << where << ": " << v.what << ": " << r.Describe();
        EXPECT_TRUE(v.field.empty() || NamesField(r, v.field))
            << where << ": " << v.what << ": the answer does not name " << v.field << ": "
            << r.Describe();
        ++refusals;
      }
    }
  }
  // Every GET whose path the test can fill (its resources made above), with its required query
  // parameters and the examples' user_id: the answer, whatever its status, is one the operation
  // documents.
  params["memory_id"] = NewMemory();
  params["event_id"] = last_event_id_;
  params["user_id"] = "alice";
  size_t reads = 0;
  size_t query_refusals = 0;
  for (const auto& [pattern, ops] : doc.at("paths").items()) {
    if (!ops.contains("get")) continue;
    const json& op = ops.at("get");
    const std::optional<std::string> filled = FillPath(pattern, params);
    if (!filled) continue;
    std::string path = *filled;
    for (const json& p : op.value("parameters", json::array())) {
      const json& param = Resolve(doc, p);
      if (param.value("in", "") != "query") continue;
      // Required ones, and the examples' user where a listing needs some scope.
      const std::string name = param.value("name", "");
      if (name == "user_id") {
        path = WithQueryParameter(path, name, params.at("user_id"));
      } else if (param.value("required", false)) {
        path = WithQueryParameter(
            path, name,
            AllowedTypes(doc, param.value("schema", json::object())).contains("string") ? "alice"
                                                                                        : "1");
      }
    }
    ExpectDocumentedAnswer(doc, op, "get " + pattern, client().Get(path));
    ++reads;
    // Each query parameter out of its documented bounds or enum is refused, naming it.
    for (const json& p : op.value("parameters", json::array())) {
      const json& param = Resolve(doc, p);
      if (param.value("in", "") != "query") continue;
      const std::string name = param.value("name", "");
      const json schema = Resolve(doc, param.value("schema", json::object()));
      std::vector<std::string> broken;
      if (schema.contains("minimum")) {
        broken.push_back(json(schema.at("minimum").get<int64_t>() - 1).dump());
      }
      if (schema.contains("maximum")) {
        broken.push_back(json(schema.at("maximum").get<int64_t>() + 1).dump());
      }
      if (schema.contains("enum")) broken.push_back("zz-not-listed");
      for (const std::string& value : broken) {
        const std::string what = "get " + pattern + ": " + name + "=" + value;
        HttpResponse r = client().Get(WithQueryParameter(path, name, value));
        EXPECT_TRUE(r.status >= 400 && r.status < 500 && r.status != 404 && r.status != 405)
            << what << ": " << r.Describe();
        EXPECT_TRUE(NamesField(r, name))
            << what << ": the answer does not name " << name << ": " << r.Describe();
        ExpectDocumentedAnswer(doc, op, what, r);
        ++query_refusals;
      }
    }
  }
  std::cout << operations << " operations, " << refusals << " bodies refused, " << accepted
            << " accepted, " << reads << " reads, " << query_refusals
            << " query parameters refused\n";
  // Every API's add, search and update bodies are documented: far more than this.
  EXPECT_GE(operations, 11u);
  EXPECT_GE(refusals, 100u);
  EXPECT_GE(reads, 25u);
  // page_number and page_size of the listings, at least.
  EXPECT_GE(query_refusals, 10u);
}

}  // namespace
}  // namespace engram::testing
