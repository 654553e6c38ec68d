// Properties of the bounded YAML walk against generated alias chains, nesting and bytes: it
// accepts exactly the documents whose expansion fits the budget, stops early on those that do not
// (a chain of 12^10 nodes is refused at once), and never throws on anything yaml-cpp loads.
#include <gtest/gtest.h>
#include <rapidcheck.h>
#include <rapidcheck/gtest.h>
#include <yaml-cpp/yaml.h>

#include <chrono>
#include <cstdint>
#include <limits>
#include <nlohmann/json.hpp>
#include <string>

#include "extract/bounded_yaml.h"

namespace engram {
namespace {

// {l0: &l0 [lol × fan], l1: &l1 [*l0 × fan], ..., lN: ...}
std::string AliasChain(int fan, int levels) {
  std::string s = "l0: &l0 [lol";
  for (int i = 1; i < fan; ++i) s += ", lol";
  s += "]\n";
  for (int l = 1; l <= levels; ++l) {
    const std::string prev = "*l" + std::to_string(l - 1);
    s += "l" + std::to_string(l) + ": &l" + std::to_string(l) + " [" + prev;
    for (int i = 1; i < fan; ++i) s += ", " + prev;
    s += "]\n";
  }
  return s;
}

// Nodes of that document fully expanded (saturating): the map, and each level's sequence with
// `fan` copies of the level below.
uint64_t ChainNodes(int fan, int levels) {
  constexpr uint64_t kCap = uint64_t{1} << 62;
  uint64_t total = 1, level = 1 + static_cast<uint64_t>(fan);
  for (int l = 0; l <= levels; ++l) {
    total = std::min(kCap, total + level);
    level = std::min(kCap, 1 + static_cast<uint64_t>(fan) * level);
  }
  return total;
}

size_t CountNodes(const nlohmann::json& j) {
  size_t n = 1;
  if (j.is_array() || j.is_object()) {
    for (const auto& child : j) n += CountNodes(child);
  }
  return n;
}

RC_GTEST_PROP(BoundedYamlProperty, AnAliasChainIsAcceptedIffItsExpansionFits, ()) {
  const int fan = *rc::gen::inRange(1, 13);
  const int levels = *rc::gen::inRange(0, 11);
  const size_t max_nodes = *rc::gen::inRange<size_t>(1, 20001);
  const YAML::Node doc = YAML::Load(AliasChain(fan, levels));
  const uint64_t expanded = ChainNodes(fan, levels);
  const auto start = std::chrono::steady_clock::now();
  auto j = BoundedYamlToJson(
      doc,
      {.max_nodes = max_nodes, .max_bytes = std::numeric_limits<size_t>::max(), .max_depth = 64});
  const auto took = std::chrono::steady_clock::now() - start;
  RC_ASSERT(j.ok() == (expanded <= max_nodes));
  if (j.ok()) {
    RC_ASSERT(CountNodes(*j) == expanded);
  } else {
    RC_ASSERT(j.status().code() == StatusCode::kInvalidParameter);
  }
  // The cost follows the budget, not the expansion (which reaches 12^11 nodes here).
  RC_ASSERT(took < std::chrono::seconds(1));
}

RC_GTEST_PROP(BoundedYamlProperty, NestingIsAcceptedIffWithinTheDepth, ()) {
  const int depth = *rc::gen::inRange(1, 80);
  const int max_depth = *rc::gen::inRange(1, 64);
  const std::string text = std::string(depth, '[') + "x" + std::string(depth, ']');
  const YAML::Node doc = YAML::Load(text);
  auto j = BoundedYamlToJson(doc, {.max_depth = max_depth});
  RC_ASSERT(j.ok() == (depth <= max_depth));
}

RC_GTEST_PROP(BoundedYamlProperty, ArbitraryTextNeverThrowsPastTheWalk, (std::string text)) {
  YAML::Node doc;
  try {
    doc = YAML::Load(text);
  } catch (const YAML::Exception&) {
    return;  // the caller turns yaml-cpp's own refusals into a 400
  }
  auto j = BoundedYamlToJson(doc, {.max_nodes = 1000, .max_bytes = 4096});
  if (j.ok()) RC_ASSERT(CountNodes(*j) <= 1000);
}

}  // namespace
}  // namespace engram
