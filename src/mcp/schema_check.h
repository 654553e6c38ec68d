// Checks tool arguments against the tool's inputSchema, so that what tools/list promises and what
// tools/call accepts cannot drift apart. Covers the subset of JSON Schema the tools' schemas use:
// type (one name or a list), properties, required, additionalProperties: false, items, enum,
// minimum / maximum, minLength / maxLength (in characters), minItems / maxItems, anyOf, oneOf,
// allOf, OpenAPI 3.0's nullable, and $ref to a place in the same document ("#/components/…");
// annotations (description, title, default, examples, format) are ignored. A schema keyword outside
// the subset is reported by UnsupportedKeywords (a unit test runs it over every tool).
//
// The services' own parsers still validate what a schema cannot say (byte limits, UTF-8, the
// filter grammar); this check gives a model precise, early feedback in the argument's own terms.
//
// Thread-safety: pure functions.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "common/status.h"

namespace engram::mcp {

// OK, or kInvalidParameter whose message names the argument by its path (e.g.
// "messages[1].role") and says what is wrong.
Status CheckAgainstSchema(const nlohmann::json& value, const nlohmann::json& schema);
// As above, `schema` being part of `document`, which its $refs are resolved in (an OpenAPI
// document's request schemas: the contract cases' bodies are checked against them).
Status CheckAgainstSchema(const nlohmann::json& value, const nlohmann::json& schema,
                          const nlohmann::json& document);

// Paths of keywords in `schema` that CheckAgainstSchema(value, schema) does not understand (empty:
// all known); $ref counts, as a schema checked alone has no document to resolve it in.
std::vector<std::string> UnsupportedKeywords(const nlohmann::json& schema);

}  // namespace engram::mcp
