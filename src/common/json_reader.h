// Bounded JSON reading for every JSON text the binary did not compile in: request bodies, uploaded
// files (_meta.json, JSON documents), answers of LLM and embedding services, rows read back from
// the store.
//
// nlohmann::json::parse accepts any depth, while dump(), operator== and most code that walks a
// value recurse: text nested a few ten thousand levels deep parses fine and then overflows the
// stack. ReadJson drives nlohmann's SAX parser (which is iterative) with its own DOM builder and
// refuses the opening bracket that goes beyond max_depth, so no deep value is ever built and every
// value it returns can be dumped, compared and walked safely. It also refuses duplicate keys and,
// where asked, NUL characters.
//
// Failures are values: InvalidParameter (PayloadTooLarge for max_bytes) with a message that names
// the input (`what`), the problem and its byte offset, e.g.
//   request body is not valid JSON: invalid string: ill-formed UTF-8 byte 0xFF at byte offset 9
//   request body is not valid JSON: number out of range at byte offset 5
// Messages never quote the input beyond one byte in hex or a short key: request content must not
// be echoed back in bulk or reach the logs.
//
// Thread-safety: pure functions. Ownership: the text is only read during the call; the returned
// value owns all its data.
#pragma once

#include <cstddef>
#include <nlohmann/json_fwd.hpp>
#include <string>
#include <string_view>

#include "common/status.h"

namespace engram {

struct JsonReadLimits {
  // How messages call the input: "request body", "_meta.json". Empty for callers that put their
  // own words in front: messages then start "not valid JSON: ...". Must outlive the call (a string
  // literal in practice).
  std::string_view what = "JSON input";
  // Longer text is refused (PayloadTooLarge) before parsing.
  size_t max_bytes = 8u << 20;
  // Arrays and objects nested deeper are refused: "{}" and "[]" are depth 1, a scalar depth 0.
  int max_depth = 64;
  // A key that appears twice in one object is refused instead of the last one silently winning.
  bool refuse_duplicate_keys = true;
  // Strings and keys holding a NUL character ("\u0000") are refused, naming where (e.g.
  // "messages[0].content"): stores and C APIs cannot keep them.
  bool refuse_nul = false;
};

// JSON this server wrote itself and reads back (store rows, merged metadata): already validated
// on the way in, so the limits only guard against a damaged or hand-edited row.
inline constexpr JsonReadLimits kStoredJsonLimits{.what = "stored JSON",
                                                  .max_bytes = size_t{1} << 30,
                                                  .max_depth = 256,
                                                  .refuse_duplicate_keys = false};

// Answers of outside services (LLM chat completions, embeddings): as large as the HTTP client
// accepts a response body (embedding batches run to several MB), lenient about duplicate keys (the
// last wins, as before: models are sloppy). Unnamed: callers say "malformed ... response: ".
inline constexpr JsonReadLimits kServiceResponseLimits{
    .what = "", .max_bytes = size_t{64} << 20, .max_depth = 64, .refuse_duplicate_keys = false};

// Parses one JSON value (surrounding whitespace allowed, nothing else after it).
Result<nlohmann::json> ReadJson(std::string_view text, const JsonReadLimits& limits);

// For call sites whose answer to bad JSON is "treat it as absent": the value, or a discarded value
// (is_discarded() true) when ReadJson fails. Same contract as nlohmann's
// parse(text, nullptr, /*allow_exceptions=*/false), with the limits.
nlohmann::json ReadJsonOrDiscarded(std::string_view text, const JsonReadLimits& limits);

// Compact serialisation that never throws: invalid UTF-8 (possible only in values built in code,
// ReadJson refuses it) becomes U+FFFD. Recursion is bounded by the depth of the value, which
// ReadJson bounds.
std::string DumpJson(const nlohmann::json& value);

}  // namespace engram
