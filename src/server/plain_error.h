// The transport's own error answers. The plain one is for when the API's error renderer is missing
// or throws: the Agentic Memory envelope {"code", "http_code", "message"} with the status the code
// maps to. Thread-safety: a pure function.
#pragma once

#include <string>

#include "common/status.h"
#include "server/http_types.h"

namespace engram {

HttpResponse PlainErrorResponse(StatusCode code, const std::string& message);

// The response with "Retry-After: 1" unless it names a Retry-After of its own: a 503 the
// transport answers itself (overload), which the client may retry after a second.
HttpResponse WithRetryAfter(HttpResponse response);

}  // namespace engram
