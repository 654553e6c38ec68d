#include "openapi_lookup.h"

#include <fstream>
#include <sstream>
#include <vector>

#include "common/ascii.h"
#include "mcp/schema_check.h"

namespace engram::testing {

namespace {

using nlohmann::json;

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

}  // namespace

json LoadOpenApiDocument() {
  std::ifstream in(std::string(ENGRAM_TEST_SOURCE_DIR) + "/src/api/openapi.json");
  std::stringstream text;
  text << in.rdbuf();
  return json::parse(text.str(), nullptr, /*allow_exceptions=*/false);
}

const json* DocumentedOperation(const json& doc, const std::string& method,
                                std::string_view target) {
  const std::vector<std::string> wanted = Segments(target.substr(0, target.find('?')));
  const std::string lower = LowerAscii(method);
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

json RequestSchema(const json& operation) {
  return operation.value(json::json_pointer("/requestBody/content/application~1json/schema"),
                         json());
}

json ResponseSchema(const json& doc, const json& operation, int status) {
  const json responses = operation.value("responses", json::object());
  json response = responses.value(std::to_string(status), responses.value("default", json()));
  if (response.is_object() && response.contains("$ref") && response["$ref"].is_string()) {
    const std::string ref = response["$ref"].get<std::string>();
    if (ref.rfind("#/", 0) != 0) return json();
    response = doc.value(json::json_pointer(ref.substr(1)), json());
  }
  if (!response.is_object()) return json();
  return response.value(json::json_pointer("/content/application~1json/schema"), json());
}

Status CheckDocumentedAnswer(const json& doc, const json& operation, int status,
                             std::string_view content_type, const std::string& body) {
  const json responses = operation.value("responses", json::object());
  if (!responses.contains(std::to_string(status)) && !responses.contains("default")) {
    return Status::InvalidParameter("the status " + std::to_string(status) + " is not documented");
  }
  const json schema = ResponseSchema(doc, operation, status);
  if (schema.is_null()) {
    if (status != 204 && !body.empty() && content_type.find("json") != std::string_view::npos) {
      return Status::InvalidParameter("a JSON body the document does not describe");
    }
    return Status::Ok();
  }
  const json parsed = json::parse(body, nullptr, /*allow_exceptions=*/false);
  if (parsed.is_discarded()) return Status::InvalidParameter("the body is not the documented JSON");
  return mcp::CheckAgainstSchema(parsed, schema, doc);
}

}  // namespace engram::testing
