// The data-driven contract suite's case files (tests/contract/cases/**/*.test), in the style of
// DuckDB's sqllogictest files: each file is a sequence of steps run in order against one fresh
// server; each step is a request written as a cURL command and what its answer must be.
//
//   # comment
//   include setup/coffee.steps        -- the steps of another file (relative to cases/), first
//
//   example                           -- a request copied from a reference, verbatim
//   curl --location 'http://****-hangzhou.opensearch.aliyuncs.com/v4/…/memories/add' (\)
//   --header 'Authorization: Bearer your-API-KEY' (\)
//   --data '{ … }'                    -- (lines continued with a backslash, as published)
//   ----
//   200 until .status "SUCCEEDED"     -- status; optionally poll until a value holds
//   bind me-06bde8b5-…                -- literals standing for ids the server makes
//   any .request_id .latency          -- only the JSON type is checked there
//   subset .results                   -- the answer's array holds these items, in any order
//   exact .                           -- the object has exactly the expected keys
//   header x-engram-version           -- the answer carries this header, not empty
//   { "event_id": "me-06bde8b5-…", … }   -- the expected JSON (the rest of the step)
//
// Step kinds: `example` (the cURL command must appear verbatim in a reference document),
// `example-data` (its --data payload must) and `step` (a request of the suite's own: set-up, or a
// contract rule no reference prints). `fill '<placeholder>' zip-base64 DIR` before the request
// replaces a placeholder the reference prints in place of content with real content (a fixture
// folder zipped and base64-encoded).
//
// Thread-safety: pure functions.
#pragma once

#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace engram::contract {

// A cURL command reduced to what it sends.
struct CurlRequest {
  std::string method;  // GET unless -X / --request, or POST when there is data
  std::string url;     // as written
  std::string target;  // the URL's path and query ("/v4/…?page_number=1")
  std::vector<std::pair<std::string, std::string>> headers;  // in order
  std::optional<std::string> data;                           // --data / -d / --data-raw
};

// Parses a cURL command as a POSIX shell would split it (backslash-newline continuations, single
// and double quotes, backslash escapes). Known options: --location / -L, -X / --request,
// --header / -H, --data / -d / --data-raw / --data-binary. Anything else is an error.
std::optional<CurlRequest> ParseCurl(std::string_view command, std::string* error);

enum class StepKind { kExample, kExampleData, kStep };

struct Fill {
  std::string placeholder;  // as the reference prints it
  std::string how;          // "zip-base64"
  std::string source;       // a folder under tests/contract/fixtures
};

struct Expectation {
  int status = 0;
  std::optional<std::string> until_path;  // poll until the value at this path …
  nlohmann::json until_value;             // … equals this
  std::vector<std::string> binds;
  std::vector<std::string> any;
  std::vector<std::string> subset;
  std::vector<std::string> exact;
  std::vector<std::string> headers;
  std::optional<nlohmann::json> body;  // none: only the status (and headers) are checked
};

struct Step {
  StepKind kind = StepKind::kStep;
  int line = 0;  // where the step starts in its file
  std::vector<Fill> fills;
  std::string curl;  // the command's text as written (continuations kept)
  Expectation expect;
};

struct CaseFile {
  std::vector<std::string> includes;  // paths relative to the cases folder, in order
  std::vector<Step> steps;
};

// Parses a case file's text. Errors name the line.
std::optional<CaseFile> ParseCaseFile(std::string_view text, std::string* error);

// The values the `bind` literals of the steps so far stand for.
using Bindings = std::map<std::string, std::string>;

// `text` with every bound literal replaced by its value.
std::string Substitute(std::string_view text, const Bindings& bindings);

// Whether `actual` is what `expect` describes (body and paths only; status and headers are the
// runner's). Unbound `binds` met as a whole expected string bind to the actual string. On a
// mismatch, `*why` names the path and both values.
bool MatchBody(const Expectation& expect, const nlohmann::json& actual, Bindings& bindings,
               std::string* why);

// The value at a path such as `.result.status` or `.results[0].id` (null when absent).
nlohmann::json ValueAt(const nlohmann::json& doc, std::string_view path);

}  // namespace engram::contract
