// MemoryFilter: the search-filter grammar of the memory API (docs/api/README.md, "Filters"),
// parsed once per request into a tree that is evaluated per candidate memory inside retrieval.
//
//   filter    := {"AND": [filter...]} | {"OR": [filter...]} | {"NOT": filter} | leaf
//   leaf      := {field: value}                       (equality)
//              | {field: {op: value}}                 (op in eq ne in gt gte lt lte contains
//                                                      icontains *)
//   field     := user_id | agent_id | run_id | app_id | session_id | created_at | updated_at
//              | memory_ids | keywords | categories | metadata.<key>
//
// Parse errors are kInvalidParameter with a message naming the JSON path and the problem, e.g.
// `filters.AND[1].colour: unknown field (allowed: user_id, agent_id, ...)`.
//
// Decisions where the grammar is silent (mem0 compatibility first, then precision):
//  - AND / OR take a non-empty array, NOT one condition object; each must be the only key of its
//    object. Several field keys in one object, or several ops in one op object, mean AND (mem0's
//    `{"user_id": "a", "agent_id": "b"}`). A top-level `{}` matches all; a nested `{}` is an error.
//  - `{field: "*"}` is mem0's wildcard (the `*` op), not equality with "*" (write {"eq": "*"}).
//    The `*` op takes a boolean: true = present, false = absent.
//  - user_id / agent_id / run_id / app_id / session_id: strings, "" = not set, present = non-empty.
//  All
//    ops; values must be strings (`in`: an array of strings). eq / ne / in compare the stored
//    value ("" when unset: `ne` is true there, {"eq": ""} matches it); gt..lte (byte order),
//    contains and icontains are false on an unset field.
//  - created_at / updated_at: eq ne in gt gte lt lte with ISO 8601 strings (ParseIsoToMicros),
//    compared to the microsecond.
//  - memory_ids: eq (one id) or in (ids); the shorthand {"memory_ids": [..]} means `in`.
//  - keywords: contains / icontains on the memory text only.
//  - categories: the memory's category names. eq and contains: has this one; ne: has not; in: has
//    any of these (the shorthand {"categories": [..]} means `in`); `*`: true = has any, false =
//    has none. Strings only, compared by bytes.
//  - metadata.<key>: a top-level key, taken literally (dots included). eq / ne / in with any JSON
//    value (numbers compare by value: 1 == 1.0); gt..lte with a number or a string operand,
//    false when the stored value is of the other type; contains / icontains on string values
//    only. An absent key fails every op but `ne` (and `"*": false`); a null value is present.
//  - contains compares bytes; icontains compares ICU full case folds (U_FOLD_CASE_DEFAULT).
//  - `in` may be empty (matches nothing). Limits count every operator, implicit AND and leaf.
//
// Thread-safety: a parsed filter is immutable; Matches and ScopeKeys are safe to call concurrently.
#pragma once

#include <cstdint>
#include <memory>
#include <nlohmann/json_fwd.hpp>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"

namespace engram {

// What a filter sees of one memory. Views into the caller's storage; valid during the call.
struct FilterDoc {
  std::string_view id;
  std::string_view user_id;  // "" = not set
  std::string_view agent_id;
  std::string_view run_id;
  std::string_view app_id;
  std::string_view session_id;
  std::string_view text;  // the memory text ("keywords")
  std::span<const std::string> categories;
  int64_t created_at_us = 0;
  int64_t updated_at_us = 0;
  const nlohmann::json* metadata = nullptr;  // a JSON object; null = {}
};

struct FilterLimits {
  int max_depth = 16;      // nesting of AND / OR / NOT
  size_t max_nodes = 512;  // leaves plus operators
  size_t max_in_values = 1000;
  size_t max_value_bytes = 4096;
};

// One scope key: every memory matching a filter has one of a set of (field, value) pairs, with
// field one of user_id / agent_id / run_id / app_id. Used to narrow the candidates before ranking
// and to check that a search is confined to some scope.
struct ScopeKey {
  std::string field;
  std::string value;
  bool operator==(const ScopeKey&) const = default;
};

// A metadata condition every memory matching a filter satisfies: metadata[key] is one of
// `values`, given as canonical value keys (MetadataValueKeys). Lets a shard pick candidates from an
// index of metadata values instead of testing every memory of a scope.
struct MetadataEquality {
  std::string key;                  // the top-level metadata key
  std::vector<std::string> values;  // canonical value keys, sorted and unique; empty = none match
  // The keys decide the condition (string values of at most 64 bytes, booleans, null): a memory
  // listed under one of `values` satisfies it (see MemoryFilter::MatchesGivenEqualities).
  bool exact = false;
};

// Appends to `keys` the canonical keys of a scalar metadata value, such that two values equal under
// the grammar's `eq` (json ==: strings by bytes, numbers by value so 1 == 1.0, booleans, null)
// share a key. Strings key by their bytes (long ones by a hash), numbers by their value as a double
// (so distinct large integers may share a key: keys narrow, Matches decides). An unsigned integer
// above INT64_MAX gets a second key, as json == also equates it with the signed integer of the same
// bits. Returns false, appending nothing, for arrays and objects (not indexed; an equality with one
// gives no MetadataEquality).
bool MetadataValueKeys(const nlohmann::json& value, std::vector<std::string>* keys);

class MemoryFilter {
 public:
  // Matches every memory.
  MemoryFilter();
  ~MemoryFilter();
  MemoryFilter(MemoryFilter&&) noexcept;
  MemoryFilter& operator=(MemoryFilter&&) noexcept;

  // Parses `filters` (the JSON value of the request's "filters"); `path` prefixes error messages.
  static Result<MemoryFilter> Parse(const nlohmann::json& filters, std::string_view path,
                                    const FilterLimits& limits);

  // This filter AND field == value (field is user_id, agent_id, run_id, app_id or session_id: the
  // request's top-level shorthand). Any other field is a programming error: asserted, and in
  // release builds the filter then matches nothing (failing closed keeps scopes confined).
  void AndEquals(std::string_view field, std::string_view value);

  bool Matches(const FilterDoc& doc) const;
  // Matches for a memory known to satisfy every exact MetadataEquality (one picked from an index
  // keyed by MetadataValueKeys under all of them): skips those conditions, the JSON lookups of a
  // metadata filter. Any other memory may get a wrong answer.
  bool MatchesGivenEqualities(const FilterDoc& doc) const;
  // Matches for a memory known to be indexed under one of ScopeKeys() (drawn from an index of
  // user_id / agent_id / run_id / app_id values) and, when equalities_given, to satisfy every exact
  // MetadataEquality: skips the top-level scope equalities / `in`s whose values are exactly those
  // keys (the search's own user_id: comparing it read each candidate's id string, a cache miss
  // apiece, 10 % of a filtered search's CPU). Any other memory may get a wrong answer.
  bool MatchesInScope(const FilterDoc& doc, bool equalities_given) const;

  // Keys such that every matching memory has at least one of them; nullopt when the filter does
  // not confine memories to a finite set of user_id / agent_id / run_id / app_id values (e.g. only
  // metadata conditions, or a NOT, or an OR with an unconstrained branch). Derivation: an equality
  // or `in` on user_id / agent_id / run_id / app_id gives its values; AND takes the smallest set
  // among its constrained children; OR unites its children's sets if all are constrained. An
  // equality with "" (an unset field) does not constrain. Keys come sorted by field, then value,
  // unique.
  std::optional<std::vector<ScopeKey>> ScopeKeys() const;

  // Necessary metadata equalities: the metadata eq / in leaves of the top-level conjunction (nested
  // ANDs included), or the filter itself when it is one such leaf. Every matching memory satisfies
  // all of them; leaves under OR or NOT, and eq / in with an array or object operand, give none.
  std::vector<MetadataEquality> MetadataEqualities() const;

  // True when the filter matches every memory (no conditions).
  bool empty() const;

 private:
  struct Node;
  class Parser;
  // Marks the scope leaves MatchesInScope may skip; after every change to root_.
  void MarkScopeLeaves();
  std::unique_ptr<Node> root_;  // null = match all
};

}  // namespace engram
