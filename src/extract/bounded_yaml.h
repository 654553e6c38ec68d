// BoundedYamlToJson: a yaml-cpp node tree as JSON, under a budget.
//
// yaml-cpp shares an aliased node instead of copying it, so a few hundred bytes of anchors and
// aliases ("l1: &l1 [*l0, *l0, ...]", ten levels) describe a tree of billions of nodes. Walking
// such a tree naively (to JSON, or to anything else) expands every alias: minutes of CPU and
// gigabytes of memory, then std::bad_alloc. This walk counts every node it emits, alias copies
// included, and stops with an error the moment a budget runs out, so its cost is bounded by the
// budget whatever the document.
//
// Parsing is not done here: the caller loads the text with yaml-cpp (whose parser refuses
// nesting beyond its own depth guard, DeepRecursion) and catches yaml-cpp's exceptions.
//
// Thread-safety: pure function. Does not keep `node`.
#pragma once

#include <yaml-cpp/node/node.h>

#include <cstddef>
#include <nlohmann/json_fwd.hpp>

#include "common/status.h"

namespace engram {

struct YamlJsonBudget {
  // Nodes emitted (maps, sequences, scalars, nulls; an alias counts every node it copies).
  size_t max_nodes = 10000;
  // Bytes of map keys and scalars emitted, plus one per node: at most about the size of a
  // document without aliases, so a budget equal to the text's own limit never refuses one.
  size_t max_bytes = 64 << 10;
  // Nesting of maps and sequences; `node` itself is depth 0.
  int max_depth = 32;
};

// `node` as JSON: maps -> objects, sequences -> arrays, scalars -> strings (YAML scalars are not
// typed here: "1" and "true" stay strings), null -> null. kInvalidParameter, with a message meant
// to follow the caller's name for the node ("... expands beyond 10000 nodes (YAML aliases?)"),
// when a budget is exceeded or a map key is not a scalar.
Result<nlohmann::json> BoundedYamlToJson(const YAML::Node& node, const YamlJsonBudget& budget);

}  // namespace engram
