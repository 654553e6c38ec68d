#include "mcp/schema_check.h"

#include <fmt/format.h>

#include <optional>
#include <set>

namespace engram::mcp {

namespace {

using json = nlohmann::json;

bool IsType(const json& v, const std::string& type) {
  if (type == "string") return v.is_string();
  if (type == "integer") return v.is_number_integer();
  if (type == "number") return v.is_number();
  if (type == "boolean") return v.is_boolean();
  if (type == "object") return v.is_object();
  if (type == "array") return v.is_array();
  if (type == "null") return v.is_null();
  return false;
}

const char* TypeOf(const json& v) {
  switch (v.type()) {
    case json::value_t::object:
      return "an object";
    case json::value_t::array:
      return "an array";
    case json::value_t::string:
      return "a string";
    case json::value_t::boolean:
      return "a boolean";
    case json::value_t::null:
      return "null";
    case json::value_t::number_integer:
    case json::value_t::number_unsigned:
      return "an integer";
    case json::value_t::number_float:
      return "a number with a fraction";
    default:
      return "an unsupported value";
  }
}

std::string Article(const std::string& type) {
  if (type == "integer" || type == "object" || type == "array") return "an " + type;
  if (type == "null") return "null";
  return "a " + type;
}

// A non-negative integer keyword (minLength, maxItems...), or nullopt when absent.
std::optional<size_t> SizeKeyword(const json& schema, const char* key) {
  auto it = schema.find(key);
  if (it == schema.end() || !it->is_number_integer() || it->get<int64_t>() < 0) return std::nullopt;
  return static_cast<size_t>(it->get<int64_t>());
}

size_t CodePoints(const std::string& s) {
  size_t n = 0;
  for (unsigned char c : s) n += (c & 0xC0) != 0x80;
  return n;
}

std::string Join(const std::vector<std::string>& items, std::string_view last_sep) {
  std::string out;
  for (size_t i = 0; i < items.size(); ++i) {
    if (i > 0) out += (i + 1 == items.size()) ? std::string(last_sep) : std::string(", ");
    out += items[i];
  }
  return out;
}

std::string Child(const std::string& path, const std::string& key) {
  return path.empty() ? key : path + "." + key;
}

// What $ref resolves against, and how deep references have led.
struct Refs {
  const json* root = nullptr;  // the document holding the schema; null: $ref is an error
  int depth = 0;
};

constexpr int kMaxRefDepth = 64;  // a schema referring to itself forever ends here

Status Check(const json& v, const json& schema, const std::string& path, Refs refs);

// The schema `ref` ("#/components/schemas/Memory") names in `refs.root`.
Result<const json*> Resolve(const std::string& ref, const Refs& refs) {
  if (refs.root == nullptr || !ref.starts_with("#/")) {
    return Status::InvalidParameter(fmt::format("schema reference {} cannot be resolved", ref));
  }
  if (refs.depth >= kMaxRefDepth) {
    return Status::InvalidParameter(fmt::format("schema reference {} nests too deep", ref));
  }
  const json* at = refs.root;
  for (size_t begin = 2; begin <= ref.size();) {
    size_t end = ref.find('/', begin);
    if (end == std::string::npos) end = ref.size();
    const std::string key = ref.substr(begin, end - begin);
    if (!at->is_object() || !at->contains(key)) {
      return Status::InvalidParameter(fmt::format("schema reference {} names nothing", ref));
    }
    at = &(*at)[key];
    begin = end + 1;
  }
  return at;
}

// oneOf: exactly one alternative holds.
Status CheckOneOf(const json& v, const json& options, const std::string& path, Refs refs) {
  const std::string name = path.empty() ? "arguments" : path;
  size_t holding = 0;
  std::optional<Status> first_failure;
  for (const json& option : options) {
    Status s = Check(v, option, path, refs);
    if (s.ok()) {
      ++holding;
      continue;
    }
    // The failure of the form of the value's type names the problem best (as for anyOf).
    auto t = option.find("type");
    if (!first_failure ||
        (t != option.end() && t->is_string() && IsType(v, t->get<std::string>()))) {
      first_failure = s;
    }
  }
  if (holding == 1) return Status::Ok();
  if (holding > 1) {
    return Status::InvalidParameter(fmt::format("{} matches more than one of its forms", name));
  }
  return first_failure.value_or(
      Status::InvalidParameter(fmt::format("{} matches none of its forms", name)));
}

// `path` names the value ("" for the arguments object itself).
Status Check(const json& v, const json& schema, const std::string& path, Refs refs) {
  const std::string name = path.empty() ? "arguments" : path;
  if (!schema.is_object()) return Status::Ok();
  if (auto ref = schema.find("$ref"); ref != schema.end() && ref->is_string()) {
    auto target = Resolve(ref->get<std::string>(), refs);
    if (!target.ok()) return target.status();
    return Check(v, **target, path, Refs{refs.root, refs.depth + 1});
  }
  // OpenAPI 3.0's nullable: null is allowed beside the schema's type.
  if (auto n = schema.find("nullable"); n != schema.end() && *n == true && v.is_null()) {
    return Status::Ok();
  }
  if (auto all = schema.find("allOf"); all != schema.end() && all->is_array()) {
    for (const json& part : *all) ENGRAM_RETURN_IF_ERROR(Check(v, part, path, refs));
  }
  if (auto one = schema.find("oneOf"); one != schema.end() && one->is_array()) {
    ENGRAM_RETURN_IF_ERROR(CheckOneOf(v, *one, path, refs));
  }
  if (auto any = schema.find("anyOf"); any != schema.end() && any->is_array()) {
    std::vector<std::string> kinds;
    for (const json& option : *any) {
      Status s = Check(v, option, path, refs);
      if (s.ok()) return Status::Ok();
      // One alternative of the right type names the precise problem better than the list.
      if (auto t = option.find("type");
          t != option.end() && t->is_string() && IsType(v, t->get<std::string>())) {
        return s;
      }
      if (auto t = option.find("type"); t != option.end() && t->is_string()) {
        kinds.push_back(Article(t->get<std::string>()));
      }
    }
    return Status::InvalidParameter(
        fmt::format("{} must be {}, got {}", name, Join(kinds, " or "), TypeOf(v)));
  }
  if (auto t = schema.find("type"); t != schema.end()) {
    std::vector<std::string> types;
    if (t->is_string()) types.push_back(t->get<std::string>());
    if (t->is_array()) {
      for (const json& e : *t) {
        if (e.is_string()) types.push_back(e.get<std::string>());
      }
    }
    bool matched = false;
    for (const auto& type : types) matched = matched || IsType(v, type);
    if (!matched) {
      std::vector<std::string> named;
      for (const auto& type : types) named.push_back(Article(type));
      return Status::InvalidParameter(
          fmt::format("{} must be {}, got {}", name, Join(named, " or "), TypeOf(v)));
    }
  }
  if (auto e = schema.find("enum"); e != schema.end() && e->is_array()) {
    bool found = false;
    std::vector<std::string> allowed;
    for (const json& option : *e) {
      found = found || option == v;
      allowed.push_back(option.dump());
    }
    if (!found) {
      return Status::InvalidParameter(
          fmt::format("{} must be one of {}", name, Join(allowed, " or ")));
    }
  }
  if (v.is_number()) {
    const double d = v.get<double>();
    if (auto m = schema.find("minimum");
        m != schema.end() && m->is_number() && d < m->get<double>()) {
      return Status::InvalidParameter(fmt::format("{} must be at least {}", name, m->dump()));
    }
    if (auto m = schema.find("maximum");
        m != schema.end() && m->is_number() && d > m->get<double>()) {
      return Status::InvalidParameter(fmt::format("{} must be at most {}", name, m->dump()));
    }
  }
  if (v.is_string()) {
    const size_t n = CodePoints(v.get_ref<const std::string&>());
    if (auto m = SizeKeyword(schema, "minLength"); m && n < *m) {
      return Status::InvalidParameter(
          *m == 1 ? fmt::format("{} must not be empty", name)
                  : fmt::format("{} must have at least {} characters", name, *m));
    }
    if (auto m = SizeKeyword(schema, "maxLength"); m && n > *m) {
      return Status::InvalidParameter(
          fmt::format("{} is too long: {} characters, at most {} allowed", name, n, *m));
    }
  }
  if (v.is_array()) {
    if (auto m = SizeKeyword(schema, "minItems"); m && v.size() < *m) {
      return Status::InvalidParameter(fmt::format("{} must have at least {} item(s)", name, *m));
    }
    if (auto m = SizeKeyword(schema, "maxItems"); m && v.size() > *m) {
      return Status::InvalidParameter(
          fmt::format("{} has too many items: {}, at most {} allowed", name, v.size(), *m));
    }
    if (auto items = schema.find("items"); items != schema.end()) {
      for (size_t i = 0; i < v.size(); ++i) {
        ENGRAM_RETURN_IF_ERROR(Check(v[i], *items, fmt::format("{}[{}]", name, i), refs));
      }
    }
  }
  if (v.is_object()) {
    const auto props = schema.find("properties");
    if (auto req = schema.find("required"); req != schema.end() && req->is_array()) {
      for (const json& key : *req) {
        if (key.is_string() && !v.contains(key.get<std::string>())) {
          return Status::InvalidParameter(
              fmt::format("{} is required", Child(path, key.get<std::string>())));
        }
      }
    }
    const auto extra = schema.find("additionalProperties");
    const bool closed = extra != schema.end() && extra->is_boolean() && !extra->get<bool>();
    for (const auto& [key, item] : v.items()) {
      const json* sub = nullptr;
      if (props != schema.end() && props->is_object()) {
        if (auto p = props->find(key); p != props->end()) sub = &*p;
      }
      if (sub == nullptr) {
        if (closed) {
          std::vector<std::string> known;
          if (props != schema.end()) {
            for (const auto& [k, ignored] : props->items()) known.push_back(k);
          }
          return Status::InvalidParameter(
              fmt::format("{} is not a known argument{}", Child(path, key),
                          known.empty() ? std::string() : "; known: " + Join(known, ", ")));
        }
        continue;
      }
      ENGRAM_RETURN_IF_ERROR(Check(item, *sub, Child(path, key), refs));
    }
  }
  return Status::Ok();
}

void Collect(const json& schema, const std::string& path, std::vector<std::string>* out) {
  static const std::set<std::string> kKnown = {
      "type",      "properties",  "required", "additionalProperties",
      "items",     "enum",        "minimum",  "maximum",
      "minLength", "maxLength",   "minItems", "maxItems",
      "anyOf",     "description", "title",    "default",
      "examples",  "allOf",       "oneOf",    "nullable",
      "format"};
  if (!schema.is_object()) return;
  for (const auto& [key, value] : schema.items()) {
    if (!kKnown.count(key)) out->push_back(Child(path, key));
    if (key == "additionalProperties" && !value.is_boolean()) out->push_back(Child(path, key));
  }
  if (auto p = schema.find("properties"); p != schema.end() && p->is_object()) {
    for (const auto& [key, sub] : p->items()) Collect(sub, Child(path, "properties." + key), out);
  }
  if (auto i = schema.find("items"); i != schema.end()) Collect(*i, Child(path, "items"), out);
  for (const char* combinator : {"anyOf", "oneOf", "allOf"}) {
    if (auto a = schema.find(combinator); a != schema.end() && a->is_array()) {
      for (size_t i = 0; i < a->size(); ++i) {
        Collect((*a)[i], Child(path, fmt::format("{}[{}]", combinator, i)), out);
      }
    }
  }
}

}  // namespace

Status CheckAgainstSchema(const json& value, const json& schema) {
  return Check(value, schema, "", Refs{});
}

Status CheckAgainstSchema(const json& value, const json& schema, const json& document) {
  return Check(value, schema, "", Refs{&document, 0});
}

std::vector<std::string> UnsupportedKeywords(const json& schema) {
  std::vector<std::string> out;
  Collect(schema, "", &out);
  return out;
}

}  // namespace engram::mcp
