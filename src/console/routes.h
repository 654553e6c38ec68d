// The web console's routes: GET /console (the page) and GET /console/{asset} (its scripts and
// styles), open like /openapi.json: the files hold no data, and every call the page makes to the
// APIs carries the API key the user signs in with.
//
// Every answer carries a strict Content-Security-Policy (scripts, styles and connections from
// this server only; no inline script or style, no frames, no forms), nosniff, no referrer and
// no framing, so the page cannot be made to run anything but its own files.
//
// Thread-safety: the handlers are safe to run concurrently.
#pragma once

#include "api/router.h"

namespace engram::console {

// The Content-Security-Policy every console answer carries.
inline constexpr const char* kContentSecurityPolicy =
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
    "connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'";

void RegisterRoutes(Router& router);

}  // namespace engram::console
