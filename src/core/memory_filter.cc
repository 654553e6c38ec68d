#include "core/memory_filter.h"

#include <fmt/format.h>
#include <unicode/stringoptions.h>
#include <unicode/ustring.h>
#include <unicode/utypes.h>

#include <algorithm>
#include <cassert>
#include <cstring>
#include <functional>
#include <limits>
#include <nlohmann/json.hpp>
#include <tuple>
#include <utility>

#include "common/time_util.h"

namespace engram {
namespace {

using json = nlohmann::json;

enum class Field : uint8_t {
  kUserId,
  kAgentId,
  kRunId,
  kAppId,
  kSessionId,
  kCreatedAt,
  kUpdatedAt,
  kMemoryIds,
  kKeywords,
  kCategories,
  kMetadata,
};

enum class Op : uint8_t { kEq, kNe, kIn, kGt, kGte, kLt, kLte, kContains, kIContains, kExists };

constexpr uint16_t Bit(Op op) { return static_cast<uint16_t>(1u << static_cast<unsigned>(op)); }

constexpr uint16_t kOrderOps = Bit(Op::kEq) | Bit(Op::kNe) | Bit(Op::kIn) | Bit(Op::kGt) |
                               Bit(Op::kGte) | Bit(Op::kLt) | Bit(Op::kLte);
constexpr uint16_t kTextOps = Bit(Op::kContains) | Bit(Op::kIContains);
constexpr uint16_t kAllOps = kOrderOps | kTextOps | Bit(Op::kExists);

struct FieldSpec {
  std::string_view name;
  Field field;
  uint16_t ops;  // the ops allowed on the field
};

constexpr FieldSpec kFields[] = {
    {"user_id", Field::kUserId, kAllOps},
    {"agent_id", Field::kAgentId, kAllOps},
    {"run_id", Field::kRunId, kAllOps},
    {"app_id", Field::kAppId, kAllOps},
    {"session_id", Field::kSessionId, kAllOps},
    {"created_at", Field::kCreatedAt, kOrderOps},
    {"updated_at", Field::kUpdatedAt, kOrderOps},
    {"memory_ids", Field::kMemoryIds, Bit(Op::kEq) | Bit(Op::kIn)},
    {"keywords", Field::kKeywords, kTextOps},
    {"categories", Field::kCategories,
     Bit(Op::kEq) | Bit(Op::kNe) | Bit(Op::kIn) | Bit(Op::kContains) | Bit(Op::kExists)},
};
constexpr FieldSpec kMetadataSpec = {"metadata.<key>", Field::kMetadata, kAllOps};
constexpr std::string_view kMetadataPrefix = "metadata.";

struct OpSpec {
  std::string_view name;
  Op op;
};

constexpr OpSpec kOps[] = {
    {"eq", Op::kEq},
    {"ne", Op::kNe},
    {"in", Op::kIn},
    {"gt", Op::kGt},
    {"gte", Op::kGte},
    {"lt", Op::kLt},
    {"lte", Op::kLte},
    {"contains", Op::kContains},
    {"icontains", Op::kIContains},
    {"*", Op::kExists},
};

constexpr std::string_view kWildcard = "*";

bool IsIdField(Field f) {
  return f == Field::kUserId || f == Field::kAgentId || f == Field::kRunId || f == Field::kAppId ||
         f == Field::kSessionId;
}

bool IsDateField(Field f) { return f == Field::kCreatedAt || f == Field::kUpdatedAt; }

// The scope fields ScopeKeys reports (session_id is not a scope).
bool IsScopeField(Field f) {
  return f == Field::kUserId || f == Field::kAgentId || f == Field::kRunId || f == Field::kAppId;
}

std::string_view NameOf(Field f) {
  for (const FieldSpec& spec : kFields) {
    if (spec.field == f) return spec.name;
  }
  return "metadata";
}

std::string OpNames(uint16_t mask) {
  std::string out;
  for (const OpSpec& spec : kOps) {
    if ((mask & Bit(spec.op)) == 0) continue;
    if (!out.empty()) out += ", ";
    out += spec.name;
  }
  return out;
}

std::string FieldNames() {
  std::string out;
  for (const FieldSpec& spec : kFields) {
    out += spec.name;
    out += ", ";
  }
  out += kMetadataSpec.name;
  return out;
}

std::string Join(std::string_view path, std::string_view key) {
  if (path.empty()) return std::string(key);
  return fmt::format("{}.{}", path, key);
}

std::string Index(std::string_view path, size_t i) { return fmt::format("{}[{}]", path, i); }

Status Error(std::string_view path, std::string_view problem) {
  if (path.empty()) return Status::InvalidParameter(std::string(problem));
  return Status::InvalidParameter(fmt::format("{}: {}", path, problem));
}

bool IsAscii(std::string_view s) {
  return std::all_of(s.begin(), s.end(),
                     [](char c) { return static_cast<unsigned char>(c) < 0x80; });
}

char AsciiLower(char c) { return c >= 'A' && c <= 'Z' ? static_cast<char>(c - 'A' + 'a') : c; }

// Substring search of an already lower-cased ASCII needle in ASCII text, ignoring case.
bool AsciiFoldedContains(std::string_view hay, std::string_view folded_needle) {
  if (folded_needle.empty()) return true;
  return std::search(hay.begin(), hay.end(), folded_needle.begin(), folded_needle.end(),
                     [](char h, char n) { return AsciiLower(h) == n; }) != hay.end();
}

// Full case fold (ICU default) of UTF-8 text into UTF-16; invalid bytes become U+FFFD. `scratch`
// and `out` keep their capacity between calls, so the steady state allocates nothing.
void FoldToUtf16(std::string_view text, std::u16string& scratch, std::u16string& out) {
  out.clear();
  if (text.empty()) return;
  // A UTF-8 byte never yields more than one UTF-16 unit.
  scratch.resize(text.size());
  int32_t len = 0;
  UErrorCode status = U_ZERO_ERROR;
  u_strFromUTF8WithSub(scratch.data(), static_cast<int32_t>(scratch.size()), &len, text.data(),
                       static_cast<int32_t>(text.size()), 0xFFFD, nullptr, &status);
  if (U_FAILURE(status)) return;
  // Folding can grow a string (ß -> ss, ΐ -> three units); retry once with the exact size.
  out.resize(static_cast<size_t>(len) + 16);
  for (int attempt = 0; attempt < 2; ++attempt) {
    status = U_ZERO_ERROR;
    const int32_t n = u_strFoldCase(out.data(), static_cast<int32_t>(out.size()), scratch.data(),
                                    len, U_FOLD_CASE_DEFAULT, &status);
    if (status == U_BUFFER_OVERFLOW_ERROR) {
      out.resize(static_cast<size_t>(n));
      continue;
    }
    if (U_FAILURE(status)) break;
    out.resize(static_cast<size_t>(n));
    return;
  }
  out.clear();
}

// Sets the icontains needle: its fold in UTF-16, and in ASCII when the fold is ASCII.
void PrepareFoldedNeedle(std::string_view needle, std::u16string* folded, std::string* ascii,
                         bool* is_ascii) {
  std::u16string scratch;
  FoldToUtf16(needle, scratch, *folded);
  *is_ascii = std::all_of(folded->begin(), folded->end(), [](char16_t c) { return c < 0x80; });
  ascii->clear();
  if (*is_ascii) {
    for (char16_t c : *folded) ascii->push_back(static_cast<char>(c));
  }
}

// Strings longer than this key by a hash: a metadata index stays small when values are long texts.
constexpr size_t kMaxKeyedStringBytes = 64;

// Whether a value's key is its identity: equal keys mean equal values (strings keyed by their
// bytes, booleans, null), unlike numbers (keyed as doubles) and hashed long strings.
bool ExactlyKeyed(const json& v) {
  return (v.is_string() && v.get_ref<const std::string&>().size() <= kMaxKeyedStringBytes) ||
         v.is_boolean() || v.is_null();
}

std::string NumberKey(double d) {
  if (d == 0) d = 0;  // -0.0 == 0.0
  std::string key(1 + sizeof(double), 'n');
  std::memcpy(key.data() + 1, &d, sizeof(double));
  return key;
}

}  // namespace

bool MetadataValueKeys(const json& v, std::vector<std::string>* keys) {
  switch (v.type()) {
    case json::value_t::null:
      keys->emplace_back("z");
      return true;
    case json::value_t::boolean:
      keys->emplace_back(v.get<bool>() ? "b1" : "b0");
      return true;
    case json::value_t::string: {
      const std::string& s = v.get_ref<const std::string&>();
      if (s.size() <= kMaxKeyedStringBytes) {
        std::string key;
        key.reserve(1 + s.size());
        key += 's';
        key += s;
        keys->push_back(std::move(key));
      } else {
        const uint64_t h = std::hash<std::string_view>{}(s);
        std::string key(1 + sizeof(h), 'h');
        std::memcpy(key.data() + 1, &h, sizeof(h));
        keys->push_back(std::move(key));
      }
      return true;
    }
    case json::value_t::number_integer:
      keys->push_back(NumberKey(static_cast<double>(v.get<int64_t>())));
      return true;
    case json::value_t::number_unsigned: {
      // json == compares an unsigned with a double by value, but with a signed integer after a cast
      // to int64_t: above INT64_MAX both values must lead to the doc.
      const uint64_t u = v.get<uint64_t>();
      keys->push_back(NumberKey(static_cast<double>(u)));
      if (u > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
        keys->push_back(NumberKey(static_cast<double>(static_cast<int64_t>(u))));
      }
      return true;
    }
    case json::value_t::number_float:
      keys->push_back(NumberKey(v.get<double>()));
      return true;
    default:
      return false;
  }
}

// A tree node: an operator over children, or one (field, op, operand) leaf whose operand was
// prepared at parse time (sorted `in` lists, parsed dates, folded needles) so that Matches only
// compares.
struct MemoryFilter::Node {
  enum class Kind : uint8_t { kAnd, kOr, kNot, kLeaf };

  Kind kind = Kind::kLeaf;
  std::vector<std::unique_ptr<Node>> children;  // kAnd / kOr: any number; kNot: one

  Field field = Field::kUserId;
  Op op = Op::kEq;
  bool exists = true;             // kExists: true = present, false = absent
  bool exact_equality = false;    // metadata eq / in whose keys decide it (ExactlyKeyed)
  bool scope_decided = false;     // a top-level scope leaf whose values are ScopeKeys() exactly
  std::string key;                // metadata key
  std::string str;                // string operand; icontains: the ASCII fold of the needle
  bool folded_ascii = false;      // icontains: the needle's fold is ASCII (the fast path applies)
  std::u16string folded;          // icontains: the needle's full case fold
  int64_t micros = 0;             // date operand
  std::vector<std::string> strs;  // `in` strings, sorted and unique
  std::vector<int64_t> times;     // `in` dates, sorted and unique
  json value;                     // metadata operand (eq / ne / gt..lte)
  std::vector<json> others;       // metadata `in`: the non-string values

  static std::unique_ptr<Node> Make(Kind kind) {
    auto node = std::make_unique<Node>();
    node->kind = kind;
    return node;
  }

  bool Matches(const FilterDoc& doc) const;
  bool MatchesGivenEqualities(const FilterDoc& doc) const;
  bool MatchesGiven(const FilterDoc& doc, bool equalities, bool scope) const;
  bool LeafMatches(const FilterDoc& doc) const;
  bool StringMatches(std::string_view v, bool present) const;
  bool TimeMatches(int64_t t) const;
  bool MetadataMatches(const json* metadata) const;
  bool CategoriesMatch(std::span<const std::string> categories) const;
  bool FoldedContains(std::string_view hay) const;
  std::optional<std::vector<ScopeKey>> Scope() const;
  void Equalities(std::vector<MetadataEquality>* out) const;
};

bool MemoryFilter::Node::Matches(const FilterDoc& doc) const {
  switch (kind) {
    case Kind::kAnd:
      for (const auto& child : children) {
        if (!child->Matches(doc)) return false;
      }
      return true;
    case Kind::kOr:
      for (const auto& child : children) {
        if (child->Matches(doc)) return true;
      }
      return false;
    case Kind::kNot:
      return !children.front()->Matches(doc);
    case Kind::kLeaf:
      return LeafMatches(doc);
  }
  return false;
}

bool MemoryFilter::Node::MatchesGivenEqualities(const FilterDoc& doc) const {
  return MatchesGiven(doc, /*equalities=*/true, /*scope=*/false);
}

bool MemoryFilter::Node::MatchesGiven(const FilterDoc& doc, bool equalities, bool scope) const {
  if (kind == Kind::kAnd) {
    for (const auto& child : children) {
      if (!child->MatchesGiven(doc, equalities, scope)) return false;
    }
    return true;
  }
  if (kind == Kind::kLeaf && ((equalities && exact_equality) || (scope && scope_decided))) {
    return true;
  }
  return Matches(doc);
}

bool MemoryFilter::Node::LeafMatches(const FilterDoc& doc) const {
  switch (field) {
    case Field::kUserId:
      return StringMatches(doc.user_id, !doc.user_id.empty());
    case Field::kAgentId:
      return StringMatches(doc.agent_id, !doc.agent_id.empty());
    case Field::kRunId:
      return StringMatches(doc.run_id, !doc.run_id.empty());
    case Field::kAppId:
      return StringMatches(doc.app_id, !doc.app_id.empty());
    case Field::kSessionId:
      return StringMatches(doc.session_id, !doc.session_id.empty());
    case Field::kMemoryIds:
      return StringMatches(doc.id, true);
    case Field::kKeywords:
      return StringMatches(doc.text, true);
    case Field::kCreatedAt:
      return TimeMatches(doc.created_at_us);
    case Field::kUpdatedAt:
      return TimeMatches(doc.updated_at_us);
    case Field::kCategories:
      return CategoriesMatch(doc.categories);
    case Field::kMetadata:
      return MetadataMatches(doc.metadata);
  }
  return false;
}

bool MemoryFilter::Node::CategoriesMatch(std::span<const std::string> categories) const {
  // A memory has a handful of categories: linear scans beat anything cleverer.
  auto has = [&](std::string_view name) {
    return std::find(categories.begin(), categories.end(), name) != categories.end();
  };
  switch (op) {
    case Op::kEq:
    case Op::kContains:
      return has(str);
    case Op::kNe:
      return !has(str);
    case Op::kIn:
      return std::any_of(categories.begin(), categories.end(), [&](const std::string& c) {
        return std::binary_search(strs.begin(), strs.end(), c);
      });
    case Op::kExists:
      return categories.empty() != exists;
    default:
      return false;
  }
}

bool MemoryFilter::Node::StringMatches(std::string_view v, bool present) const {
  switch (op) {
    case Op::kEq:
      return v == str;
    case Op::kNe:
      return v != str;
    case Op::kIn:
      return std::binary_search(strs.begin(), strs.end(), v, std::less<>());
    case Op::kExists:
      return present == exists;
    default:
      break;
  }
  if (!present) return false;
  switch (op) {
    case Op::kGt:
      return v > str;
    case Op::kGte:
      return v >= str;
    case Op::kLt:
      return v < str;
    case Op::kLte:
      return v <= str;
    case Op::kContains:
      return v.find(str) != std::string_view::npos;
    case Op::kIContains:
      return FoldedContains(v);
    default:
      return false;
  }
}

bool MemoryFilter::Node::TimeMatches(int64_t t) const {
  switch (op) {
    case Op::kEq:
      return t == micros;
    case Op::kNe:
      return t != micros;
    case Op::kIn:
      return std::binary_search(times.begin(), times.end(), t);
    case Op::kGt:
      return t > micros;
    case Op::kGte:
      return t >= micros;
    case Op::kLt:
      return t < micros;
    case Op::kLte:
      return t <= micros;
    default:
      return false;
  }
}

bool MemoryFilter::Node::MetadataMatches(const json* metadata) const {
  const json* v = nullptr;
  if (metadata != nullptr && metadata->is_object()) {
    auto it = metadata->find(key);
    if (it != metadata->end()) v = &*it;
  }
  if (op == Op::kExists) return (v != nullptr) == exists;
  if (v == nullptr) return op == Op::kNe;
  switch (op) {
    case Op::kEq:
    case Op::kNe: {
      // Strings are the common case: compare them directly rather than through json's generic
      // operator== (measured: the filter was half of a filtered search's CPU).
      bool equal;
      if (value.is_string()) {
        equal = v->is_string() &&
                v->get_ref<const std::string&>() == value.get_ref<const std::string&>();
      } else {
        equal = *v == value;
      }
      return (op == Op::kEq) == equal;
    }
    case Op::kIn:
      if (v->is_string()) {
        return std::binary_search(strs.begin(), strs.end(), v->get_ref<const std::string&>(),
                                  std::less<>());
      }
      return std::find(others.begin(), others.end(), *v) != others.end();
    case Op::kGt:
    case Op::kGte:
    case Op::kLt:
    case Op::kLte: {
      // Numbers compare with numbers and strings with strings; json's own ordering would rank
      // mismatched types by type, which no user means.
      const bool comparable = value.is_number() ? v->is_number() : v->is_string();
      if (!comparable) return false;
      if (op == Op::kGt) return value < *v;
      if (op == Op::kGte) return !(*v < value);
      if (op == Op::kLt) return *v < value;
      return !(value < *v);
    }
    case Op::kContains:
      return v->is_string() && v->get_ref<const std::string&>().find(str) != std::string::npos;
    case Op::kIContains:
      return v->is_string() && FoldedContains(v->get_ref<const std::string&>());
    default:
      return false;
  }
}

bool MemoryFilter::Node::FoldedContains(std::string_view hay) const {
  // ASCII folds to ASCII lower case, so an ASCII text needs no ICU and no buffer.
  if (IsAscii(hay)) return folded_ascii && AsciiFoldedContains(hay, str);
  thread_local std::u16string scratch;
  thread_local std::u16string folded_hay;
  FoldToUtf16(hay, scratch, folded_hay);
  return std::u16string_view(folded_hay).find(folded) != std::u16string_view::npos;
}

std::optional<std::vector<ScopeKey>> MemoryFilter::Node::Scope() const {
  switch (kind) {
    case Kind::kNot:
      return std::nullopt;
    case Kind::kAnd: {
      std::optional<std::vector<ScopeKey>> best;
      for (const auto& child : children) {
        auto keys = child->Scope();
        if (keys && (!best || keys->size() < best->size())) best = std::move(keys);
      }
      return best;
    }
    case Kind::kOr: {
      std::vector<ScopeKey> all;
      for (const auto& child : children) {
        auto keys = child->Scope();
        if (!keys) return std::nullopt;
        all.insert(all.end(), keys->begin(), keys->end());
      }
      auto less = [](const ScopeKey& a, const ScopeKey& b) {
        return std::tie(a.field, a.value) < std::tie(b.field, b.value);
      };
      std::sort(all.begin(), all.end(), less);
      all.erase(std::unique(all.begin(), all.end()), all.end());
      return all;
    }
    case Kind::kLeaf:
      break;
  }
  if (!IsScopeField(field)) return std::nullopt;
  const std::string name(NameOf(field));
  if (op == Op::kEq) {
    if (str.empty()) return std::nullopt;
    return std::vector<ScopeKey>{{name, str}};
  }
  if (op == Op::kIn) {
    std::vector<ScopeKey> keys;
    for (const std::string& s : strs) {  // sorted and unique already
      if (s.empty()) return std::nullopt;
      keys.push_back({name, s});
    }
    return keys;
  }
  return std::nullopt;
}

void MemoryFilter::Node::Equalities(std::vector<MetadataEquality>* out) const {
  if (kind == Kind::kAnd) {
    for (const auto& child : children) child->Equalities(out);
    return;
  }
  if (kind != Kind::kLeaf || field != Field::kMetadata || (op != Op::kEq && op != Op::kIn)) return;
  MetadataEquality eq{.key = key, .values = {}, .exact = exact_equality};
  if (op == Op::kEq) {
    if (!MetadataValueKeys(value, &eq.values)) return;
  } else {
    for (const std::string& s : strs) MetadataValueKeys(json(s), &eq.values);
    for (const json& other : others) {
      if (!MetadataValueKeys(other, &eq.values)) return;
    }
  }
  std::sort(eq.values.begin(), eq.values.end());
  eq.values.erase(std::unique(eq.values.begin(), eq.values.end()), eq.values.end());
  out->push_back(std::move(eq));
}

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

MemoryFilter::MemoryFilter() = default;
MemoryFilter::~MemoryFilter() = default;
MemoryFilter::MemoryFilter(MemoryFilter&&) noexcept = default;
MemoryFilter& MemoryFilter::operator=(MemoryFilter&&) noexcept = default;

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

void MemoryFilter::MarkScopeLeaves() {
  if (!root_) return;
  const auto keys = root_->Scope();
  // The top-level conjunction (nested ANDs included), as Equalities walks it.
  std::vector<Node*> stack = {root_.get()};
  while (!stack.empty()) {
    Node* node = stack.back();
    stack.pop_back();
    if (node->kind == Node::Kind::kAnd) {
      for (auto& child : node->children) stack.push_back(child.get());
      continue;
    }
    node->scope_decided = false;
    if (!keys || node->kind != Node::Kind::kLeaf || !IsScopeField(node->field) ||
        (node->op != Op::kEq && node->op != Op::kIn)) {
      continue;
    }
    // Its values are the keys: a memory indexed under one of them satisfies it.
    node->scope_decided = node->Scope() == keys;
  }
}

void MemoryFilter::AndEquals(std::string_view field, std::string_view value) {
  auto leaf = Node::Make(Node::Kind::kLeaf);
  leaf->op = Op::kEq;
  leaf->str = std::string(value);
  bool known = false;
  for (const FieldSpec& spec : kFields) {
    if (spec.name == field && IsIdField(spec.field)) {
      leaf->field = spec.field;
      known = true;
    }
  }
  if (!known) {
    assert(false && "AndEquals takes user_id, agent_id, run_id, app_id or session_id");
    leaf = Node::Make(Node::Kind::kOr);  // an empty OR matches nothing
  }
  if (!root_) {
    root_ = std::move(leaf);
    MarkScopeLeaves();
    return;
  }
  if (root_->kind != Node::Kind::kAnd) {
    auto conj = Node::Make(Node::Kind::kAnd);
    conj->children.push_back(std::move(root_));
    root_ = std::move(conj);
  }
  root_->children.push_back(std::move(leaf));
  MarkScopeLeaves();
}

bool MemoryFilter::Matches(const FilterDoc& doc) const { return !root_ || root_->Matches(doc); }

bool MemoryFilter::MatchesGivenEqualities(const FilterDoc& doc) const {
  return !root_ || root_->MatchesGivenEqualities(doc);
}

bool MemoryFilter::MatchesInScope(const FilterDoc& doc, bool equalities_given) const {
  return !root_ || root_->MatchesGiven(doc, equalities_given, /*scope=*/true);
}

std::optional<std::vector<ScopeKey>> MemoryFilter::ScopeKeys() const {
  if (!root_) return std::nullopt;
  return root_->Scope();
}

std::vector<MetadataEquality> MemoryFilter::MetadataEqualities() const {
  std::vector<MetadataEquality> out;
  if (root_) root_->Equalities(&out);
  return out;
}

bool MemoryFilter::empty() const { return !root_; }

}  // namespace engram
