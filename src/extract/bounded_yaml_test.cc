#include "extract/bounded_yaml.h"

#include <gtest/gtest.h>
#include <yaml-cpp/yaml.h>

#include <nlohmann/json.hpp>

namespace engram {
namespace {

TEST(BoundedYamlTest, ConvertsMapsSequencesScalarsAndNulls) {
  auto j = BoundedYamlToJson(YAML::Load("{a: [1, two, ~], b: {c: true}}"), {});
  ASSERT_TRUE(j.ok()) << j.status().ToString();
  EXPECT_EQ(j->dump(), R"({"a":["1","two",null],"b":{"c":"true"}})");
}

TEST(BoundedYamlTest, CountsAliasCopies) {
  // The sequence and two copies of the map {k: v} (map and scalar value: 2 nodes each): 5 nodes,
  // though the text describes the map once.
  YAML::Node n = YAML::Load("[&m {k: v}, *m]");
  EXPECT_TRUE(BoundedYamlToJson(n, {.max_nodes = 5}).ok());
  auto j = BoundedYamlToJson(n, {.max_nodes = 4});
  ASSERT_FALSE(j.ok());
  EXPECT_EQ(j.status().message(), "expands beyond 4 nodes (YAML aliases?)");
}

TEST(BoundedYamlTest, CountsBytes) {
  YAML::Node n = YAML::Load("[&s aaaaaaaaaa, *s, *s]");
  EXPECT_TRUE(BoundedYamlToJson(n, {.max_bytes = 34}).ok());  // 4 nodes + 3 × 10 bytes
  auto j = BoundedYamlToJson(n, {.max_bytes = 33});
  ASSERT_FALSE(j.ok());
  EXPECT_EQ(j.status().message(), "expands beyond 33 bytes (YAML aliases?)");
}

TEST(BoundedYamlTest, RefusesDepthAndNonScalarKeys) {
  EXPECT_TRUE(BoundedYamlToJson(YAML::Load("[[x]]"), {.max_depth = 2}).ok());
  auto j = BoundedYamlToJson(YAML::Load("[[[x]]]"), {.max_depth = 2});
  ASSERT_FALSE(j.ok());
  EXPECT_EQ(j.status().message(), "nests deeper than 2 levels");
  j = BoundedYamlToJson(YAML::Load("{[a, b]: c}"), {});
  ASSERT_FALSE(j.ok());
  EXPECT_EQ(j.status().message(), "has a key that is not a string");
}

}  // namespace
}  // namespace engram
