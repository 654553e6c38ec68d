// The OpenAPI fragments of every API the server routes, compiled in from the `*.openapi.json`
// files beside the code that registers each API's routes (the list is in this folder's
// CMakeLists.txt), and the document they make over the server's whole route table.
//
// Thread-safety: OpenApiFragments is a constant; GenerateServerOpenApi builds and stops a
// server's modules on a temporary directory and may run on any thread.
#pragma once

#include <span>
#include <string>

#include "api/openapi_generator.h"
#include "common/status.h"

namespace engram {

// The base fragment first (api/openapi_base.json), then one per API.
std::span<const OpenApiFragment> OpenApiFragments();

// src/api/openapi.json as this build makes it: the modules `engram serve` builds (no model, on a
// temporary data directory that is removed after), their routes, and the fragments
// (`engram openapi` prints it; a test compares it with the checked-in file).
Result<std::string> GenerateServerOpenApi();

}  // namespace engram
