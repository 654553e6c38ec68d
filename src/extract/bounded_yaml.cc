#include "extract/bounded_yaml.h"

#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

#include <nlohmann/json.hpp>

namespace engram {

namespace {

using json = nlohmann::json;

class BoundedWalk {
 public:
  explicit BoundedWalk(const YamlJsonBudget& budget) : budget_(budget) {}

  // Recursion is bounded by budget_.max_depth, which is checked before descending.
  Result<json> Convert(const YAML::Node& n, int depth) {
    ENGRAM_RETURN_IF_ERROR(CountNode());
    switch (n.Type()) {
      case YAML::NodeType::Map: {
        ENGRAM_RETURN_IF_ERROR(Descend(depth));
        json o = json::object();
        for (const auto& kv : n) {
          // A key that is a map or a sequence has no JSON form; as<std::string>() would throw.
          if (!kv.first.IsScalar())
            return Status::InvalidParameter("has a key that is not a string");
          const std::string& key = kv.first.Scalar();
          ENGRAM_RETURN_IF_ERROR(CountBytes(key.size()));
          auto value = Convert(kv.second, depth + 1);
          if (!value.ok()) return value.status();
          o[key] = std::move(*value);
        }
        return o;
      }
      case YAML::NodeType::Sequence: {
        ENGRAM_RETURN_IF_ERROR(Descend(depth));
        json a = json::array();
        for (const auto& v : n) {
          auto value = Convert(v, depth + 1);
          if (!value.ok()) return value.status();
          a.push_back(std::move(*value));
        }
        return a;
      }
      case YAML::NodeType::Scalar:
        ENGRAM_RETURN_IF_ERROR(CountBytes(n.Scalar().size()));
        return json(n.Scalar());
      default:  // Null, Undefined
        return json(nullptr);
    }
  }

 private:
  // Both count against the budget before anything is copied.
  Status CountNode() {
    if (++nodes_ > budget_.max_nodes) {
      return Status::InvalidParameter(
          fmt::format("expands beyond {} nodes (YAML aliases?)", budget_.max_nodes));
    }
    return CountBytes(1);
  }

  Status CountBytes(size_t bytes) {
    bytes_ += bytes;
    if (bytes_ > budget_.max_bytes) {
      return Status::InvalidParameter(
          fmt::format("expands beyond {} bytes (YAML aliases?)", budget_.max_bytes));
    }
    return Status::Ok();
  }

  Status Descend(int depth) const {
    if (depth >= budget_.max_depth) {
      return Status::InvalidParameter(
          fmt::format("nests deeper than {} levels", budget_.max_depth));
    }
    return Status::Ok();
  }

  const YamlJsonBudget& budget_;
  size_t nodes_ = 0;
  size_t bytes_ = 0;
};

}  // namespace

Result<json> BoundedYamlToJson(const YAML::Node& node, const YamlJsonBudget& budget) {
  // yaml-cpp throws from accessors on nodes it considers invalid (a zombie from a failed
  // lookup); the walk only reads, but the library is the library.
  try {
    return BoundedWalk(budget).Convert(node, 0);
  } catch (const YAML::Exception&) {
    return Status::InvalidParameter("is not readable YAML");
  }
}

}  // namespace engram
