// The V4 filter grammar: MemoryFilter::Parse builds the tree from the request's JSON, checking
// the grammar and the limits as it goes, and names the JSON path of every error.
#include <algorithm>
#include <cassert>
#include <cstring>
#include <functional>
#include <limits>
#include <nlohmann/json.hpp>
#include <tuple>
#include <utility>

#include "common/time_util.h"
#include "core/memory_filter.h"
#include "core/memory_filter_tree.h"

namespace engram {

using namespace filter_tree;  // NOLINT: the filter's own vocabulary, private to its files

// Builds the tree from JSON, checking the grammar and the limits as it goes.
class MemoryFilter::Parser {
 public:
  explicit Parser(const FilterLimits& limits) : limits_(limits) {}

  // A condition object at `path`, enclosed in `depth` AND / OR / NOT operators.
  Status Condition(const json& j, const std::string& path, int depth, std::unique_ptr<Node>* out);

 private:
  Status Operator(Node::Kind kind, std::string_view name, const json& v, const std::string& path,
                  int depth, std::unique_ptr<Node>* out);
  Status FieldCondition(const std::string& name, const json& v, const std::string& path,
                        std::unique_ptr<Node>* out);
  Status Leaf(const FieldSpec& spec, std::string_view field_name, const std::string& metadata_key,
              Op op, const json& v, const std::string& path, std::unique_ptr<Node>* out);
  Status StringOperand(const FieldSpec& spec, Op op, const json& v, const std::string& path,
                       Node* node);
  Status DateOperand(Op op, const json& v, const std::string& path, Node* node);
  Status MetadataOperand(Op op, const json& v, const std::string& path, Node* node);
  Status NewNode(Node::Kind kind, const std::string& path, std::unique_ptr<Node>* out);
  Status CheckBytes(size_t bytes, const std::string& path) const;
  Status CheckInSize(const json& v, const std::string& path) const;

  const FilterLimits& limits_;
  size_t nodes_ = 0;
};

Status MemoryFilter::Parser::NewNode(Node::Kind kind, const std::string& path,
                                     std::unique_ptr<Node>* out) {
  if (++nodes_ > limits_.max_nodes) {
    return Error(path, fmt::format("the filter has more than {} conditions and operators",
                                   limits_.max_nodes));
  }
  *out = Node::Make(kind);
  return Status::Ok();
}

Status MemoryFilter::Parser::CheckBytes(size_t bytes, const std::string& path) const {
  if (bytes <= limits_.max_value_bytes) return Status::Ok();
  return Error(path, fmt::format("value is {} bytes, more than the limit of {}", bytes,
                                 limits_.max_value_bytes));
}

Status MemoryFilter::Parser::CheckInSize(const json& v, const std::string& path) const {
  if (!v.is_array()) return Error(path, fmt::format("expected an array, got {}", v.type_name()));
  if (v.size() > limits_.max_in_values) {
    return Error(
        path, fmt::format("{} values, more than the limit of {}", v.size(), limits_.max_in_values));
  }
  return Status::Ok();
}

Status MemoryFilter::Parser::Condition(const json& j, const std::string& path, int depth,
                                       std::unique_ptr<Node>* out) {
  if (!j.is_object()) {
    return Error(path, fmt::format("expected a condition object, got {}", j.type_name()));
  }
  if (j.empty()) return Error(path, "empty condition object");
  static constexpr std::pair<std::string_view, Node::Kind> kOperators[] = {
      {"AND", Node::Kind::kAnd}, {"OR", Node::Kind::kOr}, {"NOT", Node::Kind::kNot}};
  for (const auto& [name, kind] : kOperators) {
    auto it = j.find(name);
    if (it == j.end()) continue;
    if (j.size() != 1) {
      std::string others;
      for (auto o = j.begin(); o != j.end(); ++o) {
        if (o.key() == name) continue;
        if (!others.empty()) others += ", ";
        others += o.key();
      }
      return Error(path, fmt::format("{} must be the only key of its object (also found: {})", name,
                                     others));
    }
    return Operator(kind, name, *it, Join(path, name), depth, out);
  }
  if (j.size() == 1) {
    return FieldCondition(j.begin().key(), j.begin().value(), Join(path, j.begin().key()), out);
  }
  // Several fields in one object: mem0's implicit AND.
  ENGRAM_RETURN_IF_ERROR(NewNode(Node::Kind::kAnd, path, out));
  for (auto it = j.begin(); it != j.end(); ++it) {
    std::unique_ptr<Node> child;
    ENGRAM_RETURN_IF_ERROR(FieldCondition(it.key(), it.value(), Join(path, it.key()), &child));
    (*out)->children.push_back(std::move(child));
  }
  return Status::Ok();
}

Status MemoryFilter::Parser::Operator(Node::Kind kind, std::string_view name, const json& v,
                                      const std::string& path, int depth,
                                      std::unique_ptr<Node>* out) {
  if (depth + 1 > limits_.max_depth) {
    return Error(path,
                 fmt::format("AND / OR / NOT nested deeper than {} levels", limits_.max_depth));
  }
  ENGRAM_RETURN_IF_ERROR(NewNode(kind, path, out));
  if (kind == Node::Kind::kNot) {
    if (!v.is_object()) {
      return Error(path, fmt::format("NOT takes one condition object, got {}", v.type_name()));
    }
    std::unique_ptr<Node> child;
    ENGRAM_RETURN_IF_ERROR(Condition(v, path, depth + 1, &child));
    (*out)->children.push_back(std::move(child));
    return Status::Ok();
  }
  if (!v.is_array() || v.empty()) {
    return Error(path, fmt::format("{} takes a non-empty array of conditions, got {}", name,
                                   v.is_array() ? "an empty array" : v.type_name()));
  }
  (*out)->children.reserve(v.size());
  for (size_t i = 0; i < v.size(); ++i) {
    std::unique_ptr<Node> child;
    ENGRAM_RETURN_IF_ERROR(Condition(v[i], Index(path, i), depth + 1, &child));
    (*out)->children.push_back(std::move(child));
  }
  return Status::Ok();
}

Status MemoryFilter::Parser::FieldCondition(const std::string& name, const json& v,
                                            const std::string& path, std::unique_ptr<Node>* out) {
  const FieldSpec* spec = nullptr;
  std::string metadata_key;
  for (const FieldSpec& candidate : kFields) {
    if (candidate.name == name) spec = &candidate;
  }
  if (spec == nullptr && name.starts_with(kMetadataPrefix)) {
    metadata_key = name.substr(kMetadataPrefix.size());
    if (metadata_key.empty()) return Error(path, "empty metadata key (write metadata.<key>)");
    spec = &kMetadataSpec;
  }
  if (spec == nullptr) {
    return Error(path, fmt::format("unknown field (allowed: {}; or AND, OR, NOT)", FieldNames()));
  }
  if (!v.is_object()) {
    // Shorthands: a scalar is equality, "*" the wildcard, a list for memory_ids / categories `in`.
    Op op = Op::kEq;
    if (v.is_string() && v.get_ref<const std::string&>() == kWildcard) {
      op = Op::kExists;
    } else if ((spec->field == Field::kMemoryIds || spec->field == Field::kCategories) &&
               v.is_array()) {
      op = Op::kIn;
    }
    if ((spec->ops & Bit(op)) == 0) {
      if (op == Op::kExists) {
        return Error(path, fmt::format("the \"*\" wildcard is not allowed for {} (allowed: {})",
                                       name, OpNames(spec->ops)));
      }
      return Error(
          path, fmt::format("{} takes an operator object (allowed: {})", name, OpNames(spec->ops)));
    }
    // The wildcard shorthand means "present", as {"*": true}.
    static const json kTrue = true;
    return Leaf(*spec, name, metadata_key, op, op == Op::kExists ? kTrue : v, path, out);
  }
  if (v.empty()) {
    return Error(path, fmt::format("empty operator object (allowed: {})", OpNames(spec->ops)));
  }
  const size_t n = v.size();
  if (n > 1) ENGRAM_RETURN_IF_ERROR(NewNode(Node::Kind::kAnd, path, out));
  for (auto it = v.begin(); it != v.end(); ++it) {
    const std::string op_path = Join(path, it.key());
    const OpSpec* op = nullptr;
    for (const OpSpec& candidate : kOps) {
      if (candidate.name == it.key()) op = &candidate;
    }
    if (op == nullptr) {
      return Error(op_path,
                   fmt::format("unknown operator (allowed for {}: {})", name, OpNames(spec->ops)));
    }
    if ((spec->ops & Bit(op->op)) == 0) {
      return Error(op_path, fmt::format("operator not allowed for {} (allowed: {})", name,
                                        OpNames(spec->ops)));
    }
    std::unique_ptr<Node> leaf;
    ENGRAM_RETURN_IF_ERROR(Leaf(*spec, name, metadata_key, op->op, it.value(), op_path, &leaf));
    if (n == 1) {
      *out = std::move(leaf);
    } else {
      (*out)->children.push_back(std::move(leaf));
    }
  }
  return Status::Ok();
}

Status MemoryFilter::Parser::Leaf(const FieldSpec& spec, std::string_view field_name,
                                  const std::string& metadata_key, Op op, const json& v,
                                  const std::string& path, std::unique_ptr<Node>* out) {
  ENGRAM_RETURN_IF_ERROR(NewNode(Node::Kind::kLeaf, path, out));
  Node* node = out->get();
  node->field = spec.field;
  node->op = op;
  node->key = metadata_key;
  if (op == Op::kExists) {
    if (!v.is_boolean()) {
      return Error(path, fmt::format("{} * takes true (present) or false (absent), got {}",
                                     field_name, v.type_name()));
    }
    node->exists = v.get<bool>();
    return Status::Ok();
  }
  if (spec.field == Field::kMetadata) return MetadataOperand(op, v, path, node);
  if (IsDateField(spec.field)) return DateOperand(op, v, path, node);
  return StringOperand(spec, op, v, path, node);
}

Status MemoryFilter::Parser::StringOperand(const FieldSpec& spec, Op op, const json& v,
                                           const std::string& path, Node* node) {
  if (op == Op::kIn) {
    ENGRAM_RETURN_IF_ERROR(CheckInSize(v, path));
    node->strs.reserve(v.size());
    for (size_t i = 0; i < v.size(); ++i) {
      const std::string item_path = Index(path, i);
      if (!v[i].is_string()) {
        return Error(item_path, fmt::format("expected a string, got {}", v[i].type_name()));
      }
      const std::string& s = v[i].get_ref<const std::string&>();
      ENGRAM_RETURN_IF_ERROR(CheckBytes(s.size(), item_path));
      node->strs.push_back(s);
    }
    std::sort(node->strs.begin(), node->strs.end());
    node->strs.erase(std::unique(node->strs.begin(), node->strs.end()), node->strs.end());
    return Status::Ok();
  }
  if (!v.is_string()) {
    if (v.is_array() && (spec.ops & Bit(Op::kIn)) != 0) {
      return Error(path, fmt::format("expected a string, got array (use {{\"in\": [...]}} to "
                                     "match any of several values)"));
    }
    return Error(path, fmt::format("expected a string, got {}", v.type_name()));
  }
  const std::string& s = v.get_ref<const std::string&>();
  ENGRAM_RETURN_IF_ERROR(CheckBytes(s.size(), path));
  if (op == Op::kIContains) {
    PrepareFoldedNeedle(s, &node->folded, &node->str, &node->folded_ascii);
  } else {
    node->str = s;
  }
  return Status::Ok();
}

Status MemoryFilter::Parser::DateOperand(Op op, const json& v, const std::string& path,
                                         Node* node) {
  auto parse = [this](const json& item, const std::string& item_path, int64_t* micros) {
    if (!item.is_string()) {
      return Error(item_path,
                   fmt::format("expected an ISO 8601 date string, got {}", item.type_name()));
    }
    const std::string& s = item.get_ref<const std::string&>();
    ENGRAM_RETURN_IF_ERROR(CheckBytes(s.size(), item_path));
    auto parsed = ParseIsoToMicros(s);
    if (!parsed) {
      return Error(item_path, fmt::format("invalid ISO 8601 date \"{}\" (e.g. 2024-01-31 or "
                                          "2024-01-31T08:00:00Z)",
                                          s));
    }
    *micros = *parsed;
    return Status::Ok();
  };
  if (op != Op::kIn) return parse(v, path, &node->micros);
  ENGRAM_RETURN_IF_ERROR(CheckInSize(v, path));
  node->times.resize(v.size());
  for (size_t i = 0; i < v.size(); ++i) {
    ENGRAM_RETURN_IF_ERROR(parse(v[i], Index(path, i), &node->times[i]));
  }
  std::sort(node->times.begin(), node->times.end());
  node->times.erase(std::unique(node->times.begin(), node->times.end()), node->times.end());
  return Status::Ok();
}

Status MemoryFilter::Parser::MetadataOperand(Op op, const json& v, const std::string& path,
                                             Node* node) {
  // Strings are measured as they are, other values by their serialized size.
  auto bytes = [](const json& item) {
    if (item.is_string()) return item.get_ref<const std::string&>().size();
    if (item.is_structured()) return item.dump().size();
    return size_t{0};
  };
  switch (op) {
    case Op::kEq:
    case Op::kNe:
      ENGRAM_RETURN_IF_ERROR(CheckBytes(bytes(v), path));
      node->value = v;
      node->exact_equality = op == Op::kEq && ExactlyKeyed(v);
      return Status::Ok();
    case Op::kIn:
      ENGRAM_RETURN_IF_ERROR(CheckInSize(v, path));
      for (size_t i = 0; i < v.size(); ++i) {
        ENGRAM_RETURN_IF_ERROR(CheckBytes(bytes(v[i]), Index(path, i)));
        if (v[i].is_string()) {
          node->strs.push_back(v[i].get<std::string>());
        } else {
          node->others.push_back(v[i]);
        }
      }
      std::sort(node->strs.begin(), node->strs.end());
      node->strs.erase(std::unique(node->strs.begin(), node->strs.end()), node->strs.end());
      node->exact_equality =
          std::all_of(node->strs.begin(), node->strs.end(),
                      [](const std::string& s) { return s.size() <= kMaxKeyedStringBytes; }) &&
          std::all_of(node->others.begin(), node->others.end(), ExactlyKeyed);
      return Status::Ok();
    case Op::kGt:
    case Op::kGte:
    case Op::kLt:
    case Op::kLte:
      if (!v.is_number() && !v.is_string()) {
        return Error(path, fmt::format("expected a number or a string, got {}", v.type_name()));
      }
      ENGRAM_RETURN_IF_ERROR(CheckBytes(bytes(v), path));
      node->value = v;
      return Status::Ok();
    case Op::kContains:
    case Op::kIContains: {
      if (!v.is_string()) {
        return Error(path, fmt::format("expected a string, got {}", v.type_name()));
      }
      const std::string& s = v.get_ref<const std::string&>();
      ENGRAM_RETURN_IF_ERROR(CheckBytes(s.size(), path));
      if (op == Op::kIContains) {
        PrepareFoldedNeedle(s, &node->folded, &node->str, &node->folded_ascii);
      } else {
        node->str = s;
      }
      return Status::Ok();
    }
    case Op::kExists:
      break;
  }
  return Status::Ok();
}

Result<MemoryFilter> MemoryFilter::Parse(const json& filters, std::string_view path,
                                         const FilterLimits& limits) {
  MemoryFilter filter;
  // Clients send `"filters": {}` to mean "no conditions".
  if (filters.is_object() && filters.empty()) return filter;
  Parser parser(limits);
  Status st = parser.Condition(filters, std::string(path), 0, &filter.root_);
  if (!st.ok()) return st;
  filter.MarkScopeLeaves();
  return filter;
}

}  // namespace engram
