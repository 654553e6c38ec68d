// Random identifiers (UUID v4) for memories, events, requests.
// Thread-safety: all functions are safe to call concurrently (per-thread generators).
#pragma once

#include <string>
#include <string_view>

namespace engram {

// A random RFC 4122 version-4 UUID in canonical lower-case form.
std::string NewUuid();

// `prefix` + "-" + NewUuid(), e.g. NewId("m") -> "m-3f2b…".
std::string NewId(std::string_view prefix);

}  // namespace engram
