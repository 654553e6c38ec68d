#include "core/memory_filter.h"

#include <algorithm>
#include <cassert>
#include <cstring>
#include <functional>
#include <limits>
#include <nlohmann/json.hpp>
#include <tuple>
#include <utility>

#include "common/time_util.h"
#include "core/memory_filter_tree.h"

namespace engram {

using namespace filter_tree;  // NOLINT: the filter's own vocabulary, private to its files

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

MemoryFilter::MemoryFilter() = default;
MemoryFilter::~MemoryFilter() = default;
MemoryFilter::MemoryFilter(MemoryFilter&&) noexcept = default;
MemoryFilter& MemoryFilter::operator=(MemoryFilter&&) noexcept = default;

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
