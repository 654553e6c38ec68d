// The real tools' descriptions, and the argument checks that run before any service is called
// (the services are null here: a handler that reached one would crash the test).
#include "mcp/service_tools.h"

#include <gtest/gtest.h>

#include <set>

#include "mcp/schema_check.h"

namespace engram::mcp {
namespace {

using json = nlohmann::json;

class ServiceToolsTest : public ::testing::Test {
 protected:
  ServiceToolsTest() {
    AddMemoryTools(tools_, nullptr, {});
    AddKnowledgeTools(tools_, nullptr, {});
    AddSkillTools(tools_, nullptr, {});
  }
  std::string Error(const std::string& tool, const json& args) {
    auto r = tools_.Call(*tools_.Find(tool), args, ToolContext{"ws", "2025-11-25"});
    EXPECT_TRUE(r.ok());
    EXPECT_TRUE(r->is_error);
    return r->text;
  }
  ToolRegistry tools_;
};

TEST_F(ServiceToolsTest, EveryToolIsDescribedInTheCheckedSubset) {
  std::set<std::string> names;
  for (const Tool& t : tools_.tools()) {
    names.insert(t.name);
    EXPECT_EQ(t.input_schema["type"], "object") << t.name;
    EXPECT_EQ(t.input_schema["additionalProperties"], false) << t.name;
    EXPECT_EQ(t.output_schema["type"], "object") << t.name;
    EXPECT_TRUE(UnsupportedKeywords(t.input_schema).empty()) << t.name;
    EXPECT_TRUE(UnsupportedKeywords(t.output_schema).empty()) << t.name;
    EXPECT_FALSE(t.description.empty());
    EXPECT_FALSE(t.hints.read_only && t.hints.destructive) << t.name;
  }
  EXPECT_EQ(names, (std::set<std::string>{"memory_store", "memory_recall", "memory_get",
                                          "memory_update", "memory_forget", "memory_list",
                                          "memory_history", "memory_entities", "knowledge_search",
                                          "skill_search", "skill_get"}));
}

TEST_F(ServiceToolsTest, BadArgumentsNameTheArgument) {
  EXPECT_EQ(Error("memory_store", {{"text", "a"}, {"messages", "b"}, {"user_id", "u"}}),
            "Invalid arguments for memory_store: give exactly one of messages or text");
  EXPECT_EQ(Error("memory_store", {{"text", "a"}}),
            "Invalid arguments for memory_store: at least one of user_id, agent_id, run_id is "
            "required");
  EXPECT_EQ(
      Error("memory_store", {{"text", "a"}, {"user_id", "u"}, {"expiration_date", "2024-13-01"}}),
      "Invalid arguments for memory_store: expiration_date 2024-13-01 is not a valid date");
  EXPECT_EQ(Error("memory_store",
                  {{"messages", {{{"role", "bot"}, {"content", "x"}}}}, {"user_id", "u"}}),
            "Invalid arguments for memory_store: messages[0].role must be one of \"user\", "
            "\"assistant\" or \"system\"");
  EXPECT_NE(Error("memory_recall", {{"query", "q"}, {"user_id", "u"}, {"filters", {{"colour", 1}}}})
                .find("colour"),
            std::string::npos);
  EXPECT_NE(Error("memory_recall", {{"query", "q"}}).find("user_id"), std::string::npos);
  EXPECT_EQ(Error("memory_recall", {{"query", "q"}, {"user_id", "u"}, {"top_k", 0}}),
            "Invalid arguments for memory_recall: top_k must be at least 1");
  EXPECT_NE(Error("memory_update", {{"memory_id", "m-1"}}).find("at least one of text, metadata"),
            std::string::npos);
  EXPECT_NE(Error("memory_list", json::object()).find("user_id"), std::string::npos);
  EXPECT_EQ(Error("knowledge_search", {{"kb_id", "a/b"}, {"query", "q"}}),
            "Invalid arguments for knowledge_search: kb_id must not contain control characters "
            "or any of / \\ ? #");
  EXPECT_EQ(Error("skill_search", {{"query", "q"}}),
            "Invalid arguments for skill_search: user_id is required");
}

}  // namespace
}  // namespace engram::mcp
