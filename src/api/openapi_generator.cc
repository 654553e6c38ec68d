#include "api/openapi_generator.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <vector>

namespace engram {

namespace {

// Insertion order is kept, so the document reads in the order the fragments and routes say.
using ojson = nlohmann::ordered_json;

std::string LowerMethod(std::string_view method) {
  std::string out(method);
  std::transform(out.begin(), out.end(), out.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return out;
}

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

// Every `$ref` under `node` that does not name a component of `doc`.
void CheckRefs(const ojson& node, const ojson& doc, const std::string& where,
               std::vector<std::string>& problems) {
  if (node.is_object()) {
    if (auto ref = node.find("$ref"); ref != node.end() && ref->is_string()) {
      const std::string target = ref->get<std::string>();
      bool found = target.rfind("#/", 0) == 0;
      if (found) {
        try {
          found = !doc.at(ojson::json_pointer(target.substr(1))).is_null();
        } catch (const std::exception&) {
          found = false;
        }
      }
      if (!found) problems.push_back(fmt::format("{}: $ref {} names nothing", where, target));
    }
    for (const auto& [key, value] : node.items()) CheckRefs(value, doc, where, problems);
  } else if (node.is_array()) {
    for (const auto& value : node) CheckRefs(value, doc, where, problems);
  }
}

// The operation of `route` as the document shows it: the fragment's, with the path parameters it
// does not describe added in the path's order, the keys in a fixed order, and `security: []` on
// an open route.
ojson RouteOperation(const Route& route, const ojson& declared, const ojson& shared_parameters,
                     const std::string& where, std::vector<std::string>& problems) {
  const std::vector<std::string> in_path = PathParameters(route.pattern);
  ojson parameters = ojson::array();
  std::set<std::string> described;
  const ojson own = declared.value("parameters", ojson::array());
  for (const ojson& p : own) {
    if (p.value("in", "") != "path") continue;
    const std::string name = p.value("name", "");
    if (std::find(in_path.begin(), in_path.end(), name) == in_path.end()) {
      problems.push_back(fmt::format("{}: path parameter {} is not in the path", where, name));
    }
    described.insert(name);
  }
  for (const std::string& name : in_path) {
    if (described.contains(name)) {
      for (const ojson& p : own) {
        if (p.value("in", "") == "path" && p.value("name", "") == name) parameters.push_back(p);
      }
    } else if (shared_parameters.contains(name)) {
      parameters.push_back({{"$ref", "#/components/parameters/" + name}});
    } else {
      parameters.push_back(
          {{"name", name}, {"in", "path"}, {"required", true}, {"schema", {{"type", "string"}}}});
    }
  }
  for (const ojson& p : own) {
    if (p.value("in", "") != "path") parameters.push_back(p);
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

}  // namespace

Result<std::string> GenerateOpenApi(const Router& router,
                                    std::span<const OpenApiFragment> fragments,
                                    std::string_view version) {
  if (fragments.empty()) return Status::InvalidParameter("no OpenAPI fragments");
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
  if (!doc.contains("info")) problems.push_back("the base fragment has no info");
  doc["info"]["version"] = std::string(version);
  const ojson shared_parameters = doc.contains("components")
                                      ? doc["components"].value("parameters", ojson::object())
                                      : ojson::object();

  // Each operation is filed under tags the document lists (the endpoints page groups by them).
  std::set<std::string> tags;
  for (const ojson& tag : doc.value("tags", ojson::array())) tags.insert(tag.value("name", ""));
  ojson paths = ojson::object();
  std::set<std::string> used;
  for (const Route& route : router.routes()) {
    const std::string key = route.doc.empty() ? route.name : route.doc;
    const std::string where = fmt::format("{} {} ({})", route.method, route.pattern, key);
    auto it = operations.find(key);
    if (it == operations.end()) {
      problems.push_back(fmt::format("{}: no fragment declares operation {}", where, key));
      continue;
    }
    used.insert(key);
    const ojson& op_tags = it->second.first.value("tags", ojson::array());
    if (op_tags.empty()) problems.push_back(fmt::format("{}: no tags", where));
    for (const ojson& tag : op_tags) {
      if (!tag.is_string() || !tags.contains(tag.get<std::string>())) {
        problems.push_back(
            fmt::format("{}: tag {} is not in the document's tags", where, tag.dump()));
      }
    }
    paths[route.pattern][LowerMethod(route.method)] =
        RouteOperation(route, it->second.first, shared_parameters, where, problems);
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

}  // namespace engram
