// The V4 filter's parsed form, shared by the parser (memory_filter_parser.cc) and the matcher
// (memory_filter.cc): the fields and operators of the grammar, the helpers both use, and
// MemoryFilter::Node, the tree a filter compiles to. Private to the filter: nothing else includes
// it.
//
// Thread-safety: constants and pure functions; a Node is immutable once parsed.
#pragma once

#include <fmt/format.h>
#include <unicode/stringoptions.h>
#include <unicode/ustring.h>
#include <unicode/utypes.h>

#include <algorithm>
#include <cstring>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "core/memory_filter.h"

namespace engram {
namespace filter_tree {

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

inline bool IsIdField(Field f) {
  return f == Field::kUserId || f == Field::kAgentId || f == Field::kRunId || f == Field::kAppId ||
         f == Field::kSessionId;
}

inline bool IsDateField(Field f) { return f == Field::kCreatedAt || f == Field::kUpdatedAt; }

// The scope fields ScopeKeys reports (session_id is not a scope).
inline bool IsScopeField(Field f) {
  return f == Field::kUserId || f == Field::kAgentId || f == Field::kRunId || f == Field::kAppId;
}

inline std::string_view NameOf(Field f) {
  for (const FieldSpec& spec : kFields) {
    if (spec.field == f) return spec.name;
  }
  return "metadata";
}

inline std::string OpNames(uint16_t mask) {
  std::string out;
  for (const OpSpec& spec : kOps) {
    if ((mask & Bit(spec.op)) == 0) continue;
    if (!out.empty()) out += ", ";
    out += spec.name;
  }
  return out;
}

inline std::string FieldNames() {
  std::string out;
  for (const FieldSpec& spec : kFields) {
    out += spec.name;
    out += ", ";
  }
  out += kMetadataSpec.name;
  return out;
}

inline std::string Join(std::string_view path, std::string_view key) {
  if (path.empty()) return std::string(key);
  return fmt::format("{}.{}", path, key);
}

inline std::string Index(std::string_view path, size_t i) { return fmt::format("{}[{}]", path, i); }

inline Status Error(std::string_view path, std::string_view problem) {
  if (path.empty()) return Status::InvalidParameter(std::string(problem));
  return Status::InvalidParameter(fmt::format("{}: {}", path, problem));
}

inline bool IsAscii(std::string_view s) {
  return std::all_of(s.begin(), s.end(),
                     [](char c) { return static_cast<unsigned char>(c) < 0x80; });
}

inline char AsciiLower(char c) {
  return c >= 'A' && c <= 'Z' ? static_cast<char>(c - 'A' + 'a') : c;
}

// Substring search of an already lower-cased ASCII needle in ASCII text, ignoring case.
inline bool AsciiFoldedContains(std::string_view hay, std::string_view folded_needle) {
  if (folded_needle.empty()) return true;
  return std::search(hay.begin(), hay.end(), folded_needle.begin(), folded_needle.end(),
                     [](char h, char n) { return AsciiLower(h) == n; }) != hay.end();
}

// Full case fold (ICU default) of UTF-8 text into UTF-16; invalid bytes become U+FFFD. `scratch`
// and `out` keep their capacity between calls, so the steady state allocates nothing.
inline void FoldToUtf16(std::string_view text, std::u16string& scratch, std::u16string& out) {
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
inline void PrepareFoldedNeedle(std::string_view needle, std::u16string* folded, std::string* ascii,
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
inline bool ExactlyKeyed(const json& v) {
  return (v.is_string() && v.get_ref<const std::string&>().size() <= kMaxKeyedStringBytes) ||
         v.is_boolean() || v.is_null();
}

inline std::string NumberKey(double d) {
  if (d == 0) d = 0;  // -0.0 == 0.0
  std::string key(1 + sizeof(double), 'n');
  std::memcpy(key.data() + 1, &d, sizeof(double));
  return key;
}

}  // namespace filter_tree

// A tree node: an operator over children, or one (field, op, operand) leaf whose operand was
// prepared at parse time (sorted `in` lists, parsed dates, folded needles) so that Matches only
// compares.
struct MemoryFilter::Node {
  using Field = filter_tree::Field;
  using Op = filter_tree::Op;
  using json = filter_tree::json;

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

}  // namespace engram
