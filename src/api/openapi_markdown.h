// EndpointsMarkdown: docs/api/endpoints.md, the table of every endpoint, rendered from the
// generated OpenAPI document (api/openapi_generator.h): one section per tag, in the order the
// document lists its tags, one row per operation in route order (method, path, what it does,
// whether it needs a key). `engram endpoints-doc` prints it; a test keeps the checked-in page
// current.
//
// Thread-safety: a pure function.
#pragma once

#include <string>
#include <string_view>

#include "common/status.h"

namespace engram {

Result<std::string> EndpointsMarkdown(std::string_view openapi_json);

}  // namespace engram
