// Finding a request's operation in the OpenAPI document (src/api/openapi.json), and the schemas
// it documents for the request's body and for an answer's status, so the contract suite can hold
// what it sends and what it gets to the document clients generate code from.
//
// Thread-safety: pure functions; the pointers point into `doc`.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "common/status.h"

namespace engram::testing {

// src/api/openapi.json of the source tree the tests were built from.
nlohmann::json LoadOpenApiDocument();

// The operation of `doc` for `method` on `target` (a path, optionally with a query; the
// document's "{…}" segments match any segment); null when the document has none.
const nlohmann::json* DocumentedOperation(const nlohmann::json& doc, const std::string& method,
                                          std::string_view target);

// The JSON schema `operation` documents for its request body, or for its answer with `status`
// (a `$ref` to a shared response resolved in `doc`); null when it documents none.
nlohmann::json RequestSchema(const nlohmann::json& operation);
nlohmann::json ResponseSchema(const nlohmann::json& doc, const nlohmann::json& operation,
                              int status);

// Whether an answer with `status`, `content_type` and `body` is one `operation` documents: its
// status is listed (or a default response is); where that response has a JSON schema the body is
// JSON that satisfies it; where it has none, the answer is not a JSON body. The error says what
// differs.
Status CheckDocumentedAnswer(const nlohmann::json& doc, const nlohmann::json& operation, int status,
                             std::string_view content_type, const std::string& body);

}  // namespace engram::testing
