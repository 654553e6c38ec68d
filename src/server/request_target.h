// Request-target parsing for the HTTP transport: the pieces of a request line's target that the
// router needs, decoded once. Kept apart from http_server.cc so it compiles without Boost and can
// be tested and fuzzed on its own.
// Thread-safety: pure functions.
#pragma once

#include <string>
#include <string_view>

namespace engram {

// Percent-decodes a path into `out` (cleared first). '+' stays '+' (it means space only in form
// queries); an invalid or truncated escape is kept literally.
void PercentDecode(std::string_view in, std::string& out);

// Splits a request target into its decoded path and raw query (the text after the first '?').
// Absolute-form targets ("http://host/p?q") are reduced to their path; an authority with no path
// ("http://host") becomes "/".
void SplitTarget(std::string_view target, std::string& path, std::string& query);

// The path of a request target as sent: still percent-encoded, without the query (absolute-form
// targets reduced as SplitTarget does). Routing splits it at '/' before decoding its segments.
std::string_view RawPath(std::string_view target);

}  // namespace engram
