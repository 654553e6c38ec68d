// GenerateOpenApi: /openapi.json made from the route table and the operations each API declares
// beside its code.
//
// A route (api/router.h) declares its method, path, handler and authentication; the operation it
// documents (summary, parameters other than its path's, request and response schemas) lives in
// its API's fragment, a `*.openapi.json` file beside the code that registers it, under the key
// Route::doc (or Route::name when doc is empty; several routes may share one: the MCP mounts).
// The generator takes the paths and methods from the routes, adds each path parameter the
// operation does not describe itself (a path parameter of that name in components.parameters,
// by $ref, else a plain string), marks open routes (AuthMode::kNone) with `security: []`, and
// merges every fragment's components. What cannot be right is an error: a route without its
// operation, an operation no route uses, a route twice or two paths of one shape, a path
// parameter the path does not have, a parameter listed twice, a component declared twice, a
// `$ref` to nothing, an open route documented as needing a key or the reverse, an operation
// without a tag the base fragment lists, a fragment of another shape.
//
// src/api/openapi.json is this function's output over the server's whole route table, checked in
// and served (a test keeps it current; `engram openapi` prints it).
//
// Thread-safety: a pure function.
#pragma once

#include <span>
#include <string>
#include <string_view>

#include "api/router.h"
#include "common/status.h"

namespace engram {

struct OpenApiFragment {
  std::string_view source;  // the file it was read from, for messages
  std::string_view text;    // JSON: {"operations": {key: operation}, "components": {...}}
};

// `fragments[0]` is the base: the document's top level (openapi, info, security) and the shared
// components; the others hold operations and the components only their API uses. `version`
// becomes info.version. The error lists every problem found, one a line.
Result<std::string> GenerateOpenApi(const Router& router,
                                    std::span<const OpenApiFragment> fragments,
                                    std::string_view version);

}  // namespace engram
