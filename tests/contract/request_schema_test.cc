// The documented request schemas (src/api/openapi.json) against the requests the contract cases
// send: every JSON body a case sends and expects to succeed must satisfy the requestBody schema
// of its path and method, $refs, oneOf and allOf included. So a field the server parses and a
// case sends cannot be missing from, or typed otherwise in, the document clients generate code
// from. No server runs: the cases are read as data.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "contract_case.h"
#include "mcp/schema_check.h"

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

std::vector<std::string> Segments(std::string_view path) {
  std::vector<std::string> out;
  size_t begin = 0;
  while (begin <= path.size()) {
    size_t end = path.find('/', begin);
    if (end == std::string_view::npos) end = path.size();
    if (end > begin) out.emplace_back(path.substr(begin, end - begin));
    begin = end + 1;
  }
  return out;
}

// The operation of `doc` for `method` on `target` (its path's "{…}" segments match any segment);
// null when the document has none.
const json* Operation(const json& doc, const std::string& method, std::string_view target) {
  const std::vector<std::string> wanted = Segments(target.substr(0, target.find('?')));
  std::string lower = method;
  std::transform(lower.begin(), lower.end(), lower.begin(), ::tolower);
  for (const auto& [pattern, operations] : doc.at("paths").items()) {
    const std::vector<std::string> have = Segments(pattern);
    if (have.size() != wanted.size()) continue;
    bool same = true;
    for (size_t i = 0; i < have.size() && same; ++i) {
      same = have[i].starts_with('{') || have[i] == wanted[i];
    }
    if (same && operations.contains(lower)) return &operations.at(lower);
  }
  return nullptr;
}

TEST(RequestSchemaTest, EveryBodyTheCasesSendSatisfiesItsDocumentedSchema) {
  const fs::path source = ENGRAM_TEST_SOURCE_DIR;
  const json doc = json::parse(ReadFile(source / "src" / "api" / "openapi.json"));
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
      const json* operation = Operation(doc, request->method, request->target);
      ASSERT_NE(operation, nullptr)
          << where << ": " << request->method << " " << request->target << " is not documented";
      const json schema =
          json(*operation)
              .value(json::json_pointer("/requestBody/content/application~1json/schema"), json());
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
