#include "config/option_table.h"

#include <gtest/gtest.h>

#include <fstream>
#include <set>
#include <sstream>

namespace engram {
namespace {

TEST(OptionTableTest, DefaultsAreValid) {
  ServeOptions defaults;
  EXPECT_TRUE(CheckOptionValues(defaults).ok()) << CheckOptionValues(defaults).ToString();
  EXPECT_TRUE(defaults.Validate().ok()) << defaults.Validate().ToString();
}

TEST(OptionTableTest, EachSettingIsDeclaredOnceWithAFlagName) {
  std::set<std::string_view> names;
  for (const OptionSpec& spec : ServeOptionTable()) {
    EXPECT_TRUE(names.insert(spec.name).second) << spec.name;
    for (char c : spec.name)
      EXPECT_TRUE((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-') << spec.name;
    EXPECT_FALSE(spec.help.empty()) << spec.name;
  }
  const auto table = ServeOptionTable();
  for (size_t i = 0; i < table.size(); ++i) {
    for (size_t j = i + 1; j < table.size(); ++j) {
      EXPECT_FALSE(table[i].field == table[j].field) << table[i].name << " and " << table[j].name;
    }
  }
  EXPECT_EQ(OptionEnvName(table[0]), "ENGRAM_LISTEN");
}

TEST(OptionTableTest, AnEnumOutsideItsChoicesNamesTheValidOnes) {
  ServeOptions o;
  o.fusion = "z";
  Status st = CheckOptionValues(o);
  EXPECT_EQ(st.code(), StatusCode::kInvalidParameter);
  EXPECT_EQ(st.message(), "--fusion must be one of zscore, score, rrf; got \"z\"");
  o = {};
  o.embedder = "bert";
  EXPECT_NE(o.Validate().message().find("builtin, openai, none"), std::string::npos);
}

TEST(OptionTableTest, ANumberOutsideItsRangeNamesTheRange) {
  ServeOptions o;
  o.max_top_k = 0;
  EXPECT_EQ(CheckOptionValues(o).message(), "--max-top-k must be 1-10000, got 0");
  o = {};
  o.max_body_bytes = 10;
  EXPECT_EQ(CheckOptionValues(o).message(), "--max-body-bytes must be at least 1024, got 10");
  o = {};
  o.vector_weight = 1.5;
  EXPECT_EQ(CheckOptionValues(o).message(), "--vector-weight must be 0-1, got 1.5");
}

TEST(OptionTableTest, RelatedSettingsAreCheckedTogether) {
  ServeOptions o;
  o.max_connections = 10;
  o.max_connections_per_client = 20;
  EXPECT_NE(o.Validate().message().find("--max-connections-per-client"), std::string::npos);
  o = {};
  o.embedder = "none";
  EXPECT_NE(o.Validate().message().find("needs an embedder"), std::string::npos);
}

// docs/configuration.md is generated from the table (`engram config-doc`): the checked-in file
// must say what the binary does.
TEST(OptionTableTest, TheConfigurationDocMatchesTheTable) {
  std::ifstream in(std::string(ENGRAM_TEST_SOURCE_DIR) + "/docs/configuration.md");
  ASSERT_TRUE(in)
      << "docs/configuration.md is missing: run build/engram config-doc > docs/configuration.md";
  std::stringstream text;
  text << in.rdbuf();
  EXPECT_EQ(text.str(), ConfigurationMarkdown())
      << "docs/configuration.md is stale: run build/engram config-doc > docs/configuration.md";
}

}  // namespace
}  // namespace engram
