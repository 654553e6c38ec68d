#include "api/openapi_generator.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <vector>

#include "common/ascii.h"

namespace engram {

namespace {

// Insertion order is kept, so the document reads in the order the fragments and routes say.
using ojson = nlohmann::ordered_json;

// The {name} parameters of a route pattern, in order.
std::vector<std::string> PathParameters(std::string_view pattern) {
  std::vector<std::string> out;
  for (size_t open = pattern.find('{'); open != std::string_view::npos;
       open = pattern.find('{', open + 1)) {
    const size_t close = pattern.find('}', open);
    if (close == std::string_view::npos) break;
    out.emplace_back(pattern.substr(open + 1, close - open - 1));
  }
  return out;
}

// Every `$ref` under `node` that does not name a part of `doc`. Example data (example, examples,
// default) is a value, not a schema: a "$ref" key there is data.
void CheckRefs(const ojson& node, const ojson& doc, const std::string& where,
               std::vector<std::string>& problems) {
  if (node.is_object()) {
    if (auto ref = node.find("$ref"); ref != node.end()) {
      bool found = ref->is_string() && ref->get_ref<const std::string&>().rfind("#/", 0) == 0;
      if (found) {
        try {
          found = !doc.at(ojson::json_pointer(ref->get<std::string>().substr(1))).is_null();
        } catch (const std::exception&) {
          found = false;
        }
      }
      if (!found) problems.push_back(fmt::format("{}: $ref {} names nothing", where, ref->dump()));
    }
    for (const auto& [key, value] : node.items()) {
      if (key == "example" || key == "examples" || key == "default") continue;
      CheckRefs(value, doc, where, problems);
    }
  } else if (node.is_array()) {
    for (const auto& value : node) CheckRefs(value, doc, where, problems);
  }
}

// A string member of `node`, or "" when it is absent or not a string.
std::string StringAt(const ojson& node, const char* key) {
  if (!node.is_object()) return "";
  auto it = node.find(key);
  return it != node.end() && it->is_string() ? it->get<std::string>() : "";
}

// `parameter` with a "#/components/parameters/…" $ref followed (null when it names nothing).
const ojson* ResolvedParameter(const ojson& parameter, const ojson& components) {
  const std::string ref = StringAt(parameter, "$ref");
  if (ref.empty()) return &parameter;
  constexpr std::string_view kPrefix = "#/components/parameters/";
  if (ref.rfind(kPrefix, 0) != 0) return nullptr;
  auto it = components.find("parameters");
  if (it == components.end() || !it->is_object()) return nullptr;
  auto found = it->find(ref.substr(kPrefix.size()));
  return found == it->end() ? nullptr : &*found;
}

// The operation of `route` as the document shows it: the fragment's, with the path parameters it
// does not describe added in the path's order (a shared path parameter of that name by $ref, else
// a plain string), the keys in a fixed order, and `security: []` on an open route.
ojson RouteOperation(const Route& route, const ojson& declared, const ojson& components,
                     const std::string& where, std::vector<std::string>& problems) {
  const std::vector<std::string> in_path = PathParameters(route.pattern);
  if (!declared.is_object()) {
    problems.push_back(fmt::format("{}: the operation is not an object", where));
    return ojson::object();
  }
  const ojson own = declared.value("parameters", ojson::array());
  if (!own.is_array()) problems.push_back(fmt::format("{}: parameters is not an array", where));
  ojson parameters = ojson::array();
  std::map<std::string, ojson> described;              // own path parameters by name
  std::set<std::pair<std::string, std::string>> seen;  // (in, name) of every own parameter
  for (const ojson& p : own.is_array() ? own : ojson::array()) {
    const ojson* resolved = ResolvedParameter(p, components);
    if (resolved == nullptr) {
      // A $ref to a missing parameter is reported by the $ref check; one elsewhere, here.
      if (StringAt(p, "$ref").rfind("#/components/parameters/", 0) != 0) {
        problems.push_back(fmt::format("{}: parameter {} is not a parameter", where, p.dump()));
      }
      continue;
    }
    const std::string in = StringAt(*resolved, "in");
    const std::string name = StringAt(*resolved, "name");
    if (in.empty() || name.empty()) {
      problems.push_back(fmt::format("{}: a parameter without in and name", where));
      continue;
    }
    if (!seen.emplace(in, name).second) {
      problems.push_back(fmt::format("{}: {} parameter {} is listed twice", where, in, name));
    }
    if (in != "path") continue;
    if (std::find(in_path.begin(), in_path.end(), name) == in_path.end()) {
      problems.push_back(fmt::format("{}: path parameter {} is not in the path", where, name));
    }
    described.emplace(name, p);
  }
  const ojson shared = components.value("parameters", ojson::object());
  for (const std::string& name : in_path) {
    if (auto it = described.find(name); it != described.end()) {
      parameters.push_back(it->second);
    } else if (shared.contains(name) && StringAt(shared[name], "in") == "path" &&
               StringAt(shared[name], "name") == name) {
      parameters.push_back({{"$ref", "#/components/parameters/" + name}});
    } else {
      parameters.push_back(
          {{"name", name}, {"in", "path"}, {"required", true}, {"schema", {{"type", "string"}}}});
    }
  }
  for (const ojson& p : own.is_array() ? own : ojson::array()) {
    const ojson* resolved = ResolvedParameter(p, components);
    if (resolved == nullptr || StringAt(*resolved, "in") != "path") parameters.push_back(p);
  }

  ojson op = ojson::object();
  for (const char* key : {"summary", "description", "tags"}) {
    if (declared.contains(key)) op[key] = declared[key];
  }
  if (!parameters.empty()) op["parameters"] = std::move(parameters);
  for (const auto& [key, value] : declared.items()) {
    if (!op.contains(key) && key != "parameters" && key != "security") op[key] = value;
  }
  const bool open = route.auth == AuthMode::kNone;
  if (declared.contains("security")) {
    const bool documented_open = declared["security"] == ojson::array();
    if (documented_open != open) {
      problems.push_back(fmt::format("{}: security says the route is {}, the route says {}", where,
                                     documented_open ? "open" : "keyed", open ? "open" : "keyed"));
    }
    op["security"] = declared["security"];
  } else if (open) {
    op["security"] = ojson::array();
  }
  return op;
}

// The path with its parameters' names left out ("/m/{}/history"): OpenAPI forbids two paths
// of one shape.
std::string PathShape(std::string_view pattern) {
  std::string out;
  for (size_t i = 0; i < pattern.size(); ++i) {
    out += pattern[i];
    if (pattern[i] == '{') {
      i = pattern.find('}', i);
      if (i == std::string_view::npos) break;
      out += '}';
    }
  }
  return out;
}

// GenerateOpenApi's work; nlohmann's type errors on a fragment of an unexpected shape are caught
// by the caller.
Result<std::string> Generate(const Router& router, std::span<const OpenApiFragment> fragments,
                             std::string_view version) {
  std::vector<std::string> problems;
  ojson doc = ojson::object();
  std::map<std::string, std::pair<ojson, std::string>> operations;  // key -> (operation, source)
  for (size_t i = 0; i < fragments.size(); ++i) {
    const OpenApiFragment& f = fragments[i];
    ojson part = ojson::parse(f.text, nullptr, /*allow_exceptions=*/false);
    if (!part.is_object()) {
      problems.push_back(fmt::format("{}: not a JSON object", f.source));
      continue;
    }
    for (const auto& [key, value] : part.items()) {
      if (key == "operations" || key == "components") {
        if (!value.is_object()) {
          problems.push_back(fmt::format("{}: {} is not an object", f.source, key));
          continue;
        }
      }
      if (key == "operations") {
        for (const auto& [name, op] : value.items()) {
          if (auto [it, fresh] = operations.try_emplace(name, op, std::string(f.source)); !fresh) {
            problems.push_back(fmt::format("{}: operation {} is also declared in {}", f.source,
                                           name, it->second.second));
          }
        }
      } else if (key == "components") {
        for (const auto& [kind, entries] : value.items()) {
          ojson& into = doc["components"][kind];
          for (const auto& [name, entry] : entries.items()) {
            if (into.contains(name)) {
              problems.push_back(
                  fmt::format("{}: components.{}.{} is declared twice", f.source, kind, name));
            }
            into[name] = entry;
          }
        }
      } else if (i == 0) {
        doc[key] = value;
      } else {
        problems.push_back(
            fmt::format("{}: only the base fragment has a top-level {}", f.source, key));
      }
    }
  }
  if (!doc.contains("info") || !doc["info"].is_object()) {
    problems.push_back("the base fragment has no info object");
    doc["info"] = ojson::object();
  }
  doc["info"]["version"] = std::string(version);
  const ojson components = doc.value("components", ojson::object());

  // Each operation is filed under tags the document lists (the endpoints page groups by them).
  std::set<std::string> tags;
  for (const ojson& tag : doc.value("tags", ojson::array())) tags.insert(StringAt(tag, "name"));
  ojson paths = ojson::object();
  std::set<std::string> used;
  std::map<std::string, std::string> shapes;  // PathShape -> the first pattern of that shape
  for (const Route& route : router.routes()) {
    const std::string key = route.doc.empty() ? route.name : route.doc;
    const std::string where = fmt::format("{} {} ({})", route.method, route.pattern, key);
    const std::string method = LowerAscii(route.method);
    const auto opens = std::count(route.pattern.begin(), route.pattern.end(), '{');
    if (opens != std::count(route.pattern.begin(), route.pattern.end(), '}') ||
        PathParameters(route.pattern).size() != static_cast<size_t>(opens)) {
      problems.push_back(fmt::format("{}: the path's braces do not pair", where));
    }
    if (auto [it, fresh] = shapes.try_emplace(PathShape(route.pattern), route.pattern);
        !fresh && it->second != route.pattern) {
      problems.push_back(
          fmt::format("{}: the same path as {} with other parameter names", where, it->second));
    }
    if (paths.contains(route.pattern) && paths[route.pattern].contains(method)) {
      problems.push_back(fmt::format("{}: routed twice", where));
      continue;
    }
    auto it = operations.find(key);
    if (it == operations.end()) {
      problems.push_back(fmt::format("{}: no fragment declares operation {}", where, key));
      continue;
    }
    used.insert(key);
    const ojson& declared = it->second.first;
    const ojson op_tags =
        declared.is_object() ? declared.value("tags", ojson::array()) : ojson::array();
    if (!op_tags.is_array() || op_tags.empty())
      problems.push_back(fmt::format("{}: no tags", where));
    for (const ojson& tag : op_tags.is_array() ? op_tags : ojson::array()) {
      if (!tag.is_string() || !tags.contains(tag.get<std::string>())) {
        problems.push_back(
            fmt::format("{}: tag {} is not in the document's tags", where, tag.dump()));
      }
    }
    paths[route.pattern][method] = RouteOperation(route, declared, components, where, problems);
  }
  for (const auto& [key, entry] : operations) {
    if (!used.contains(key)) {
      problems.push_back(fmt::format("{}: operation {} documents no route", entry.second, key));
    }
  }
  // paths after the top level's other keys, as a reader expects them.
  doc["paths"] = std::move(paths);
  CheckRefs(doc["paths"], doc, "paths", problems);
  if (doc.contains("components")) CheckRefs(doc["components"], doc, "components", problems);
  if (!problems.empty()) {
    return Status::InvalidParameter(fmt::format("{}", fmt::join(problems, "\n")));
  }
  return doc.dump(2) + "\n";
}

}  // namespace

Result<std::string> GenerateOpenApi(const Router& router,
                                    std::span<const OpenApiFragment> fragments,
                                    std::string_view version) {
  if (fragments.empty()) return Status::InvalidParameter("no OpenAPI fragments");
  try {
    return Generate(router, fragments, version);
  } catch (const nlohmann::json::exception& e) {
    return Status::InvalidParameter(
        fmt::format("an OpenAPI fragment is not shaped as the generator reads it: {}", e.what()));
  }
}

}  // namespace engram
