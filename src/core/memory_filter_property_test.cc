// Property tests of MemoryFilter over random filters and memories. They build only where
// rapidcheck is installed (librapidcheck-dev), which defines ENGRAM_HAVE_RAPIDCHECK.
#include <gtest/gtest.h>

#ifdef ENGRAM_HAVE_RAPIDCHECK
#include <rapidcheck.h>
#include <rapidcheck/gtest.h>

#include <algorithm>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <utility>

#include "core/memory_filter.h"
#include "core/memory_filter_test_support.h"

namespace engram {
namespace {

using json = nlohmann::json;
using testing::Doc;
using testing::Micros;

// ---------------------------------------------------------------------------------------------
// Properties: the logic is compositional, and ScopeKeys is sound.

const char* const kIds[] = {"", "a", "b", "c"};
const char* const kDates[] = {"2024-01-01", "2024-01-02T12:00:00Z", "2024-02-01"};
const char* const kWords[] = {"apple", "Äpfel", "PIE", "straße"};

std::string PickId() { return kIds[*rc::gen::inRange(0, 4)]; }
const char* PickField() {
  static const char* const kFieldNames[] = {"user_id", "agent_id", "run_id"};
  return kFieldNames[*rc::gen::inRange(0, 3)];
}

json RandomLeaf() {
  switch (*rc::gen::inRange(0, 8)) {
    case 0:
      return {{PickField(), PickId()}};
    case 1: {
      json values = json::array();
      const int n = *rc::gen::inRange(0, 3);
      for (int i = 0; i < n; ++i) values.push_back(PickId());
      return {{PickField(), {{"in", values}}}};
    }
    case 2: {
      static const char* const kOps[] = {"ne", "gt", "lte", "contains", "icontains"};
      return {{PickField(), {{kOps[*rc::gen::inRange(0, 5)], PickId()}}}};
    }
    case 3:
      return {{PickField(), {{"*", *rc::gen::arbitrary<bool>()}}}};
    case 4: {
      static const char* const kOps[] = {"eq", "ne", "gt", "gte", "lt", "lte"};
      return {{"created_at", {{kOps[*rc::gen::inRange(0, 6)], kDates[*rc::gen::inRange(0, 3)]}}}};
    }
    case 5: {
      static const char* const kOps[] = {"eq", "ne", "gt", "lt"};
      json operand = *rc::gen::arbitrary<bool>()
                         ? json(*rc::gen::inRange(0, 4))
                         : json(std::string(1, 'a' + *rc::gen::inRange(0, 3)));
      return {{"metadata.k", {{kOps[*rc::gen::inRange(0, 4)], operand}}}};
    }
    case 6:
      return {{"keywords", {{"icontains", kWords[*rc::gen::inRange(0, 4)]}}}};
    default:
      return {{"metadata.k", "*"}};
  }
}

json RandomFilter(int depth) {
  if (depth == 0 || *rc::gen::inRange(0, 3) == 0) return RandomLeaf();
  switch (*rc::gen::inRange(0, 3)) {
    case 0:
      return {{"NOT", RandomFilter(depth - 1)}};
    default: {
      json children = json::array();
      const int n = *rc::gen::inRange(1, 4);
      for (int i = 0; i < n; ++i) children.push_back(RandomFilter(depth - 1));
      return {{*rc::gen::arbitrary<bool>() ? "AND" : "OR", children}};
    }
  }
}

Doc RandomDoc() {
  Doc doc;
  doc.user_id = PickId();
  doc.agent_id = PickId();
  doc.run_id = PickId();
  doc.text = std::string(kWords[*rc::gen::inRange(0, 4)]) + " " + kWords[*rc::gen::inRange(0, 4)];
  doc.created_at_us = Micros(kDates[*rc::gen::inRange(0, 3)]) + *rc::gen::inRange(-1, 2);
  switch (*rc::gen::inRange(0, 3)) {
    case 0:
      doc.metadata = {{"k", *rc::gen::inRange(0, 4)}};
      break;
    case 1:
      doc.metadata = {{"k", std::string(1, 'a' + *rc::gen::inRange(0, 3))}};
      break;
    default:
      break;
  }
  return doc;
}

MemoryFilter ParseOrFail(const json& j) {
  auto parsed = MemoryFilter::Parse(j, "filters", {});
  RC_ASSERT(parsed.ok());
  return std::move(parsed).value();
}

std::string_view FieldOf(const Doc& doc, const std::string& field) {
  if (field == "user_id") return doc.user_id;
  if (field == "agent_id") return doc.agent_id;
  return doc.run_id;
}

RC_GTEST_PROP(MemoryFilterProperty, LogicIsCompositional, ()) {
  const json f = RandomFilter(3);
  const json g = RandomFilter(3);
  const MemoryFilter pf = ParseOrFail(f);
  const MemoryFilter pg = ParseOrFail(g);
  const MemoryFilter not_f = ParseOrFail({{"NOT", f}});
  const MemoryFilter not_not_f = ParseOrFail({{"NOT", {{"NOT", f}}}});
  const MemoryFilter f_and_g = ParseOrFail({{"AND", {f, g}}});
  const MemoryFilter f_or_g = ParseOrFail({{"OR", {f, g}}});
  for (int i = 0; i < 20; ++i) {
    const Doc doc = RandomDoc();
    const FilterDoc view = doc.View();
    const bool mf = pf.Matches(view);
    const bool mg = pg.Matches(view);
    RC_ASSERT(not_f.Matches(view) == !mf);
    RC_ASSERT(not_not_f.Matches(view) == mf);
    RC_ASSERT(f_and_g.Matches(view) == (mf && mg));
    RC_ASSERT(f_or_g.Matches(view) == (mf || mg));
  }
}

RC_GTEST_PROP(MemoryFilterProperty, ScopeKeysCoverEveryMatch, ()) {
  const json f = RandomFilter(3);
  MemoryFilter filter = ParseOrFail(f);
  const std::string user = kIds[*rc::gen::inRange(1, 4)];
  if (*rc::gen::arbitrary<bool>()) filter.AndEquals("user_id", user);
  const auto keys = filter.ScopeKeys();
  if (!keys) return;
  for (int i = 0; i < 40; ++i) {
    const Doc doc = RandomDoc();
    if (!filter.Matches(doc.View())) continue;
    const bool covered = std::any_of(keys->begin(), keys->end(), [&](const ScopeKey& k) {
      return FieldOf(doc, k.field) == k.value;
    });
    RC_ASSERT(covered);
  }
}

// A memory indexed under one of the scope keys gets the same verdict from MatchesInScope (which
// skips the leaves those keys decide) as from Matches.
RC_GTEST_PROP(MemoryFilterProperty, MatchesInScopeAgreesInsideTheScope, ()) {
  const json f = RandomFilter(3);
  MemoryFilter filter = ParseOrFail(f);
  if (*rc::gen::arbitrary<bool>()) filter.AndEquals("user_id", kIds[*rc::gen::inRange(1, 4)]);
  const auto keys = filter.ScopeKeys();
  if (!keys) return;
  for (int i = 0; i < 40; ++i) {
    const Doc doc = RandomDoc();
    const bool in_scope = std::any_of(keys->begin(), keys->end(), [&](const ScopeKey& k) {
      return !k.value.empty() && FieldOf(doc, k.field) == k.value;
    });
    if (!in_scope) continue;
    RC_ASSERT(filter.MatchesInScope(doc.View(), /*equalities_given=*/false) ==
              filter.Matches(doc.View()));
  }
}

RC_GTEST_PROP(MemoryFilterProperty, AndEqualsConjoins, ()) {
  const json f = RandomFilter(3);
  const MemoryFilter plain = ParseOrFail(f);
  MemoryFilter scoped = ParseOrFail(f);
  const std::string agent = PickId();
  scoped.AndEquals("agent_id", agent);
  for (int i = 0; i < 20; ++i) {
    const Doc doc = RandomDoc();
    RC_ASSERT(scoped.Matches(doc.View()) == (plain.Matches(doc.View()) && doc.agent_id == agent));
  }
}

}  // namespace
}  // namespace engram

#endif  // ENGRAM_HAVE_RAPIDCHECK
