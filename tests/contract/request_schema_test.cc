// The documented request schemas (src/api/openapi.json) against the requests the contract cases
// send: every JSON body a case sends and expects to succeed must satisfy the requestBody schema
// of its path and method, $refs, oneOf and allOf included. So a field the server parses and a
// case sends cannot be missing from, or typed otherwise in, the document clients generate code
// from. No server runs: the cases are read as data.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "contract_case.h"
#include "mcp/schema_check.h"
#include "openapi_lookup.h"

namespace engram::contract {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

std::string ReadFile(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

TEST(RequestSchemaTest, EveryBodyTheCasesSendSatisfiesItsDocumentedSchema) {
  const fs::path source = ENGRAM_TEST_SOURCE_DIR;
  const json doc = testing::LoadOpenApiDocument();
  ASSERT_FALSE(doc.is_discarded()) << "src/api/openapi.json is not JSON";
  const fs::path cases = source / "tests" / "contract" / "cases";
  size_t checked = 0;
  for (const auto& e : fs::recursive_directory_iterator(cases)) {
    if (!e.is_regular_file() || e.path().extension() != ".test") continue;
    const std::string name = fs::relative(e.path(), cases).string();
    std::string error;
    auto parsed = ParseCaseFile(ReadFile(e.path()), &error);
    ASSERT_TRUE(parsed) << name << ": " << error;
    for (const Step& step : parsed->steps) {
      const std::string where = name + ":" + std::to_string(step.line);
      auto request = ParseCurl(step.curl, &error);
      ASSERT_TRUE(request) << where << ": " << error;
      // Only what must succeed: a refused body may break its schema on purpose.
      if (!request->data || step.expect.status < 200 || step.expect.status >= 300) continue;
      const json body = json::parse(*request->data, nullptr, /*allow_exceptions=*/false);
      ASSERT_FALSE(body.is_discarded()) << where << ": the body is not JSON";
      const json* operation = testing::DocumentedOperation(doc, request->method, request->target);
      ASSERT_NE(operation, nullptr)
          << where << ": " << request->method << " " << request->target << " is not documented";
      const json schema = testing::RequestSchema(*operation);
      ASSERT_FALSE(schema.is_null()) << where << ": " << request->method << " " << request->target
                                     << " takes a JSON body the document does not describe";
      const Status s = mcp::CheckAgainstSchema(body, schema, doc);
      EXPECT_TRUE(s.ok()) << where << ": " << request->method << " " << request->target << ": "
                          << s.message();
      ++checked;
    }
  }
  // The cases send the add, search and update bodies of every API: far more than this.
  EXPECT_GE(checked, 20u);
}

}  // namespace
}  // namespace engram::contract
